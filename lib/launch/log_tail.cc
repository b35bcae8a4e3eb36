#include "lib/launch/log_tail.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

namespace dtf::launch {

LineTail::LineTail(std::string path) : path_(std::move(path)) {
  reader_ = [p = path_](uint64_t offset,
                        size_t max) -> StatusOr<std::optional<std::string>> {
    const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::optional<std::string>();
    std::string buffer(max, '\0');
    ssize_t n;
    do {
      n = ::pread(fd, buffer.data(), max, static_cast<off_t>(offset));
    } while (n < 0 && errno == EINTR);
    ::close(fd);
    buffer.resize(n > 0 ? static_cast<size_t>(n) : 0);
    return std::optional<std::string>(std::move(buffer));
  };
}

size_t LineTail::Poll(const std::function<void(std::string_view)>& line,
                      bool flush) {
  constexpr size_t kChunk = 64 * 1024;
  size_t lines = 0;
  for (;;) {
    StatusOr<std::optional<std::string>> data = reader_(offset_, kChunk);
    if (!data.ok() || !data->has_value() || (*data)->empty()) break;
    offset_ += (*data)->size();
    std::string_view chunk = **data;
    for (size_t nl; (nl = chunk.find('\n')) != std::string_view::npos;) {
      partial_.append(chunk.substr(0, nl));
      line(partial_);
      ++lines;
      partial_.clear();
      chunk.remove_prefix(nl + 1);
    }
    partial_.append(chunk);
    if ((*data)->size() < kChunk) break;
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
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
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
  return LastLinesOf(text, n, /*cut=*/start > 0);
}

std::vector<std::string> LastLinesOf(std::string_view text, size_t n,
                                     bool cut) {
  if (cut) {  // the first line is partial: drop it
    const size_t nl = text.find('\n');
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
  }
  std::vector<std::string> all;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    all.emplace_back(text.substr(0, nl));
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
  }
  if (all.size() > n) all.erase(all.begin(), all.end() - static_cast<long>(n));
  return all;
}

void LineTail::SkipToEnd() {
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path_, ec);
  if (!ec) offset_ = size;
  partial_.clear();
}

}  // namespace dtf::launch
