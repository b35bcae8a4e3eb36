#include "lib/base/os.h"

#include <unistd.h>

#include <cerrno>
#include <climits>

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

}  // namespace dtf
