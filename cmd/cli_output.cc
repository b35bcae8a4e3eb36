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

Status PrintStdout(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  return FlushStdout();
}

Status FlushStdout() {
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  if (flushed && !std::ferror(stdout)) return OkStatus();
  // A write that failed earlier left only the stream's error flag.
  const int error = errno != 0 ? errno : EIO;
  return ResourceExhaustedError(StrCat("<stdout>: ", std::strerror(error),
                                       " (the output is incomplete)"));
}

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
