// How dtf talks to the terminal: errors and warnings on stderr, colour only
// on a terminal and never when NO_COLOR is set (https://no-color.org).
#pragma once

#include <cstdio>
#include <string_view>

#include "lib/base/status.h"

namespace dtf::cli {

// Writes `text` to stdout and flushes it; an error names <stdout> (a closed
// pipe, a full disk).
Status PrintStdout(std::string_view text);
// Flushes stdout and reports any write to it that failed since it was
// opened: ResourceExhausted (exit 3, "the environment refused") naming
// <stdout> and the system's reason.
Status FlushStdout();

struct Console {
  // stderr is a terminal: progress bars may be drawn.
  bool stderr_tty = false;
  // Colour on stderr.
  bool color = false;

  // Reads isatty(2) and NO_COLOR.
  static Console FromEnvironment();

  // "dtf: error: <message>" on stderr.
  void Error(std::string_view message) const;
  void Error(const Status& status) const { Error(Message(status)); }
  void Warning(std::string_view message) const;
  // A plain line on stderr.
  void Info(std::string_view message) const;
};

}  // namespace dtf::cli
