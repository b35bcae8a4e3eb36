// Reading task logs as they grow: the launcher's foreground output and
// `dtf logs -f`.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"

namespace dtf::launch {

// Follows one file, handing out each complete line once. A file that does
// not exist yet reads as empty. Not thread-safe.
class LineTail {
 public:
  // Reads up to `max` bytes from `offset`: "" at the end, nullopt when the
  // file does not exist (yet), an error when it cannot be read.
  using Reader = std::function<StatusOr<std::optional<std::string>>(
      uint64_t offset, size_t max)>;

  // Follows the local file `path`.
  explicit LineTail(std::string path);
  // Follows a file read through `reader` (on another host); `path` names it.
  LineTail(std::string path, Reader reader)
      : path_(std::move(path)), reader_(std::move(reader)) {}

  // Calls `line` (without its '\n') for every complete line written since
  // the last call; with `flush`, also for a last line that lacks its '\n'.
  // Returns the number of lines handed out.
  size_t Poll(const std::function<void(std::string_view)>& line,
              bool flush = false);

  // Starts after what the local file holds now (a resumed run's log,
  // appended to): earlier lines are not handed out.
  void SkipToEnd();

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  Reader reader_;
  uint64_t offset_ = 0;
  std::string partial_;
};

// The last `n` lines of the file at `path` (fewer when it has fewer; none
// when it cannot be read).
std::vector<std::string> LastLines(const std::string& path, size_t n);
// The same for text in hand (the end of a log read from another host);
// with `cut`, the text starts inside a line, which is left out.
std::vector<std::string> LastLinesOf(std::string_view text, size_t n,
                                     bool cut = false);

}  // namespace dtf::launch
