#include "lib/base/os.h"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>

#include "lib/base/strings.h"

namespace dtf {

Status WriteAllFd(int fd, std::string_view data, std::string_view what) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, what);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return OkStatus();
}

std::string ReadAllFd(int fd) {
  std::string out;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return out;
    out.append(buffer, static_cast<size_t>(n));
  }
}

StatusOr<std::string> SelfExecutable() {
  char buffer[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n < 0) return ErrnoToStatus(errno, "/proc/self/exe");
  return std::string(buffer, static_cast<size_t>(n));
}

int64_t ResidentBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  long long size = 0, resident = 0;
  const int read = std::fscanf(f, "%lld %lld", &size, &resident);
  std::fclose(f);
  if (read != 2 || resident < 0) return 0;
  const long page = ::sysconf(_SC_PAGESIZE);
  return static_cast<int64_t>(resident) * (page > 0 ? page : 4096);
}

std::string HumanBytes(int64_t bytes) {
  if (bytes < 1024) return StrCat(bytes, "B");
  const char* units[] = {"K", "M", "G", "T", "P"};
  double value = static_cast<double>(bytes);
  int unit = -1;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  return value < 10 ? fmt::format("{:.1f}{}", value, units[unit])
                    : fmt::format("{:.0f}{}", value, units[unit]);
}

}  // namespace dtf
