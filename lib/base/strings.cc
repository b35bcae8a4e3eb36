#include "lib/base/strings.h"

namespace dtf {

std::string ShellQuote(std::string_view s) {
  bool bare = !s.empty();
  for (char c : s) {
    const bool safe =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
        (c >= '0' && c <= '9') ||
        std::string_view("_-./+:,@%=").find(c) != std::string_view::npos;
    if (!safe) bare = false;
  }
  if (bare) return std::string(s);
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string PadRight(std::string_view s, size_t width) {
  std::string out(s);
  if (out.size() < width) out.append(width - out.size(), ' ');
  return out;
}

}  // namespace dtf
