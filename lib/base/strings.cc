#include "lib/base/strings.h"

#include <algorithm>
#include <charconv>
#include <system_error>

#include "absl/strings/escaping.h"

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

std::string QuoteForMessage(std::string_view text) {
  constexpr size_t kMax = 100;
  const absl::string_view head(text.data(), std::min(text.size(), kMax));
  return StrCat("\"", absl::Utf8SafeCEscape(head),
                text.size() > kMax ? "\"..." : "\"");
}

std::string ListForMessage(const std::vector<std::string>& items,
                           size_t max_items) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < max_items; ++i) {
    StrAppend(&out, i > 0 ? ", " : "", QuoteForMessage(items[i]));
  }
  if (items.size() > max_items) {
    StrAppend(&out, max_items > 0 ? ", " : "", "... and ",
              items.size() - max_items, " more");
  }
  return out;
}

std::string FormatDouble(double d) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), d);
  return std::string(buf, ec == std::errc() ? end : buf);
}

}  // namespace dtf
