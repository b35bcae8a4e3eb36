#include "lib/launch/pack/elf_deps.h"

#include <glob.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "lib/base/strings.h"

namespace dtf::pack {
namespace {

namespace fs = std::filesystem;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

void ReadLdSoConfInto(const std::string& path, int depth,
                      std::vector<std::string>* dirs) {
  if (depth > 8) return;  // an include cycle
  std::ifstream in(path);
  if (!in) return;
  const std::string base = fs::path(path).parent_path().string();
  std::string line;
  while (std::getline(in, line)) {
    std::string_view l = line;
    if (size_t hash = l.find('#'); hash != std::string_view::npos) {
      l = l.substr(0, hash);
    }
    l = Trim(l);
    if (l.empty()) continue;
    if (l.starts_with("include") && l.size() > 7 &&
        (l[7] == ' ' || l[7] == '\t')) {
      std::string pattern(Trim(l.substr(7)));
      if (!pattern.empty() && pattern[0] != '/') {
        pattern = base + "/" + pattern;
      }
      glob_t g = {};
      if (::glob(pattern.c_str(), 0, nullptr, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; ++i) {
          ReadLdSoConfInto(g.gl_pathv[i], depth + 1, dirs);
        }
      }
      ::globfree(&g);
      continue;
    }
    if (l.starts_with("hwcap") && l.size() > 5 &&
        (l[5] == ' ' || l[5] == '\t')) {
      continue;
    }
    // Old ld.so.conf files may give a library type after '='.
    if (size_t eq = l.find('='); eq != std::string_view::npos) {
      l = Trim(l.substr(0, eq));
    }
    dirs->emplace_back(l);
  }
}

// A directory of DT_RPATH/DT_RUNPATH with $ORIGIN (or ${ORIGIN}) expanded;
// "" when it uses a token this reader does not expand ($LIB, $PLATFORM),
// which ld.so expands per host.
std::string ExpandOrigin(std::string_view dir, const std::string& origin) {
  std::string out;
  size_t i = 0;
  while (i < dir.size()) {
    if (dir[i] != '$') {
      out.push_back(dir[i++]);
      continue;
    }
    if (dir.substr(i, 7) == "$ORIGIN") {
      out += origin;
      i += 7;
    } else if (dir.substr(i, 9) == "${ORIGIN}") {
      out += origin;
      i += 9;
    } else {
      return "";
    }
  }
  return out;
}

// One object whose needs are still to be resolved.
struct Pending {
  std::string path;  // as found
  ElfFile elf;
  // DT_RPATH directories of the objects that loaded it, expanded.
  std::vector<std::string> inherited_rpath;
};

std::string OriginOf(const std::string& path) {
  std::error_code ec;
  fs::path real = fs::canonical(path, ec);
  if (ec) real = fs::absolute(path, ec);
  return real.parent_path().string();
}

}  // namespace

bool IsBaseSystemLibrary(std::string_view name) {
  static constexpr std::string_view kGlibc[] = {
      "libc.so.",
      "libm.so.",
      "libpthread.so.",
      "libdl.so.",
      "librt.so.",
      "libresolv.so.",
      "libutil.so.",
      "libanl.so.",
      "libnsl.so.",
      "libmvec.so.",
      "libBrokenLocale.so.",
      "libthread_db.so.",
      "libc_malloc_debug.so.",
      "libmemusage.so",
      "libpcprofile.so",
      "libnss_",
      "ld-linux",
      "ld64.so.",
      "ld.so.",
      // The GPU driver's libraries match the host's kernel module.
      "libcuda.so",
      "libnvidia-",
  };
  for (std::string_view prefix : kGlibc) {
    if (name.starts_with(prefix)) return true;
  }
  return false;
}

std::vector<std::string> ReadLdSoConf(const std::string& path) {
  std::vector<std::string> dirs;
  if (!path.empty()) ReadLdSoConfInto(path, 0, &dirs);
  return dirs;
}

StatusOr<std::vector<ResolvedLibrary>> ResolveDependencies(
    const std::string& binary, const LibrarySearch& search) {
  DTF_ASSIGN_OR_RETURN(ElfFile root, ReadElfFile(binary));
  const std::vector<std::string> conf_dirs = ReadLdSoConf(search.ld_so_conf);

  // A candidate file is taken when it is an ELF file of the binary's class
  // and machine; anything else is skipped, as ld.so skips it.
  auto try_candidate = [&](const std::string& path) -> StatusOr<ElfFile> {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) {
      return NotFoundError(path);
    }
    StatusOr<ElfFile> elf = ReadElfFile(path);
    if (!elf.ok() || elf->elf_class != root.elf_class ||
        elf->machine != root.machine) {
      return NotFoundError(path);
    }
    return elf;
  };

  std::map<std::string, ResolvedLibrary> found;
  std::set<std::string> excluded;
  std::deque<Pending> queue;
  queue.push_back({binary, root, {}});
  while (!queue.empty()) {
    Pending object = std::move(queue.front());
    queue.pop_front();
    const std::string origin = OriginOf(object.path);
    std::vector<std::string> own_rpath;
    if (!object.elf.has_runpath) {
      for (const std::string& d : object.elf.rpath) {
        std::string e = ExpandOrigin(d, origin);
        if (!e.empty()) own_rpath.push_back(std::move(e));
      }
    }
    std::vector<std::string> rpath_dirs = own_rpath;
    if (!object.elf.has_runpath) {
      rpath_dirs.insert(rpath_dirs.end(), object.inherited_rpath.begin(),
                        object.inherited_rpath.end());
    }
    std::vector<std::string> runpath_dirs;
    for (const std::string& d : object.elf.runpath) {
      std::string e = ExpandOrigin(d, origin);
      if (!e.empty()) runpath_dirs.push_back(std::move(e));
    }
    std::vector<std::string> dirs = rpath_dirs;
    dirs.insert(dirs.end(), search.library_path.begin(),
                search.library_path.end());
    dirs.insert(dirs.end(), runpath_dirs.begin(), runpath_dirs.end());
    dirs.insert(dirs.end(), conf_dirs.begin(), conf_dirs.end());
    dirs.insert(dirs.end(), search.default_dirs.begin(),
                search.default_dirs.end());

    for (const std::string& name : object.elf.needed) {
      if (found.count(name) || excluded.count(name)) continue;
      if (search.exclude && search.exclude(name)) {
        excluded.insert(name);
        continue;
      }
      std::vector<std::string> candidates;
      if (name.find('/') != std::string::npos) {
        candidates.push_back(name);
      } else {
        for (const std::string& d : dirs) {
          if (!d.empty()) candidates.push_back(StrCat(d, "/", name));
        }
      }
      bool resolved = false;
      for (const std::string& candidate : candidates) {
        StatusOr<ElfFile> elf = try_candidate(candidate);
        if (!elf.ok()) continue;
        ResolvedLibrary lib;
        lib.name = name;
        lib.path = fs::path(candidate).lexically_normal().string();
        lib.needed_by = object.path;
        lib.elf = *elf;
        // An object's DT_RPATH also serves what it loads, unless that has a
        // DT_RUNPATH of its own.
        queue.push_back({lib.path, *std::move(elf), rpath_dirs});
        found.emplace(name, std::move(lib));
        resolved = true;
        break;
      }
      if (!resolved) {
        std::string where;
        for (const std::string& d : dirs) {
          if (d.empty()) continue;
          StrAppend(&where, where.empty() ? "" : ":", d);
        }
        return NotFoundError(StrCat(name, " (needed by ", object.path,
                                    "): not found in ", where));
      }
    }
  }
  std::vector<ResolvedLibrary> out;
  out.reserve(found.size());
  for (auto& [name, lib] : found) out.push_back(std::move(lib));
  return out;
}

}  // namespace dtf::pack
