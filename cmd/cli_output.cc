#include "cmd/cli_output.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "lib/base/strings.h"

namespace dtf::cli {
namespace {

void Line(const Console& c, const char* color, std::string_view label,
          std::string_view message) {
  if (c.color) {
    std::fprintf(stderr, "dtf: %s%.*s\033[0m: %.*s\n", color,
                 static_cast<int>(label.size()), label.data(),
                 static_cast<int>(message.size()), message.data());
  } else {
    std::fprintf(stderr, "dtf: %.*s: %.*s\n", static_cast<int>(label.size()),
                 label.data(), static_cast<int>(message.size()),
                 message.data());
  }
}

}  // namespace

namespace {

// Flushes stdout; `earlier` is the errno of a write that already failed
// (0 when none did), the reason to give when the flush has none.
Status FlushStdoutAfter(int earlier) {
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  if (flushed && !std::ferror(stdout)) return OkStatus();
  const int error = !flushed && errno != 0 ? errno : earlier;
  return ResourceExhaustedError(
      StrCat("<stdout>: ", error != 0 ? std::strerror(error) : "a write failed",
             " (the output is incomplete)"));
}

}  // namespace

Status PrintStdout(std::string_view text) {
  errno = 0;
  const size_t written = std::fwrite(text.data(), 1, text.size(), stdout);
  return FlushStdoutAfter(written < text.size() ? errno : 0);
}

Status FlushStdout() { return FlushStdoutAfter(0); }

Console Console::FromEnvironment() {
  Console c;
  c.stderr_tty = isatty(STDERR_FILENO) == 1;
  const char* no_color = std::getenv("NO_COLOR");
  const char* term = std::getenv("TERM");
  c.color = c.stderr_tty && !(no_color && *no_color) &&
            !(term && std::string_view(term) == "dumb");
  return c;
}

void Console::Error(std::string_view message) const {
  Line(*this, "\033[1;31m", "error", message);
}

void Console::Warning(std::string_view message) const {
  Line(*this, "\033[1;33m", "warning", message);
}

void Console::Info(std::string_view message) const {
  std::fprintf(stderr, "%.*s\n", static_cast<int>(message.size()),
               message.data());
}

}  // namespace dtf::cli
