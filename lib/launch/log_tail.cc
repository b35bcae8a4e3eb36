#include "lib/launch/log_tail.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace dtf::launch {

size_t LineTail::Poll(const std::function<void(std::string_view)>& line,
                      bool flush) {
  size_t lines = 0;
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    char buffer[64 * 1024];
    for (;;) {
      const ssize_t n =
          ::pread(fd, buffer, sizeof(buffer), static_cast<off_t>(offset_));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      offset_ += static_cast<uint64_t>(n);
      std::string_view chunk(buffer, static_cast<size_t>(n));
      for (size_t nl; (nl = chunk.find('\n')) != std::string_view::npos;) {
        partial_.append(chunk.substr(0, nl));
        line(partial_);
        ++lines;
        partial_.clear();
        chunk.remove_prefix(nl + 1);
      }
      partial_.append(chunk);
    }
    ::close(fd);
  }
  if (flush && !partial_.empty()) {
    line(partial_);
    ++lines;
    partial_.clear();
  }
  return lines;
}

std::vector<std::string> LastLines(const std::string& path, size_t n) {
  // Only the end of a long log is read.
  constexpr off_t kWindow = 64 * 1024;
  std::vector<std::string> all;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return all;
  struct stat st {};
  const off_t size = ::fstat(fd, &st) == 0 ? st.st_size : 0;
  const off_t start = size > kWindow ? size - kWindow : 0;
  std::string text(static_cast<size_t>(size - start), '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t r = ::pread(fd, text.data() + got, text.size() - got,
                              start + static_cast<off_t>(got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  ::close(fd);
  text.resize(got);
  std::string_view rest(text);
  if (start > 0) {  // the first line is cut: drop it
    const size_t nl = rest.find('\n');
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
  }
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    all.emplace_back(rest.substr(0, nl));
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
  }
  if (all.size() > n) all.erase(all.begin(), all.end() - static_cast<long>(n));
  return all;
}

}  // namespace dtf::launch
