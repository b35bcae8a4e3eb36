#include "lib/base/memory_limit.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

#include "lib/base/os.h"
#include "lib/base/strings.h"

namespace dtf {
namespace {

namespace fs = std::filesystem;

// A cgroup limit file's value; nullopt for "max", a v1 "no limit" (a
// value near 2^63) or an unreadable file.
std::optional<int64_t> ReadLimitFile(const fs::path& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return std::nullopt;
  long long value = 0;
  if (std::sscanf(text.c_str(), "%lld", &value) != 1 || value <= 0) {
    return std::nullopt;
  }
  if (value >= (int64_t{1} << 62)) return std::nullopt;
  return static_cast<int64_t>(value);
}

// The tightest `file` of `dir` and its parents up to `root`.
void TightestUp(const fs::path& root, fs::path dir, const char* file,
                std::optional<MemoryLimit>* best) {
  for (int depth = 0; depth < 64; ++depth) {
    const fs::path path = dir / file;
    if (const auto v = ReadLimitFile(path);
        v && (!*best || *v < (*best)->bytes)) {
      *best = MemoryLimit{*v, StrCat("cgroup ", file, " (", path.string(), ")"),
                          false};
    }
    if (dir == root || !dir.has_relative_path() ||
        dir.string().size() <= root.string().size()) {
      return;
    }
    dir = dir.parent_path();
  }
}

}  // namespace

std::optional<MemoryLimit> ReadMemoryLimit(const std::string& cgroup_root) {
  std::optional<MemoryLimit> best;
  std::ifstream cgroups("/proc/self/cgroup");
  const fs::path root(cgroup_root);
  for (std::string line; std::getline(cgroups, line);) {
    // "hierarchy:controllers:path"; v2's is "0::path".
    const size_t a = line.find(':');
    const size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    const std::string relative = path.empty() ? "" : path.substr(1);
    if (controllers.empty()) {
      TightestUp(root, root / relative, "memory.max", &best);
      continue;
    }
    std::stringstream list(controllers);
    for (std::string c; std::getline(list, c, ',');) {
      if (c != "memory") continue;
      // Inside a container the cgroup's own directory is often the mount.
      const fs::path v1 = root / "memory";
      std::error_code ec;
      TightestUp(v1, fs::exists(v1 / relative, ec) ? v1 / relative : v1,
                 "memory.limit_in_bytes", &best);
    }
  }
  rlimit as{};
  if (::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY &&
      (!best || int64_t(as.rlim_cur) < best->bytes)) {
    best = MemoryLimit{int64_t(as.rlim_cur), "ulimit -v", true};
  }
  return best;
}

int64_t MemoryInUse(const MemoryLimit& limit) {
  if (!limit.address_space) return ResidentBytes();
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  long long size = 0;
  const int read = std::fscanf(f, "%lld", &size);
  std::fclose(f);
  if (read != 1 || size < 0) return 0;
  const long page = ::sysconf(_SC_PAGESIZE);
  return static_cast<int64_t>(size) * (page > 0 ? page : 4096);
}

}  // namespace dtf
