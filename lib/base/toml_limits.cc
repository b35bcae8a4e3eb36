#include "lib/base/toml_limits.h"

#include <cstdint>

#include "lib/base/strings.h"

namespace dtf::toml_util {

Status CheckTomlLimits(std::string_view text, const std::string& source) {
  if (text.size() > kMaxTomlBytes) {
    return InvalidArgumentError(
        StrCat(source, ":1:1: the document is ", text.size(),
               " bytes, over the limit of ", kMaxTomlBytes, " bytes (",
               kMaxTomlBytes >> 20, " MiB)"));
  }
  uint32_t line = 1;
  uint32_t column = 1;
  int nesting = 0;
  int key_parts = 1;  // parts of the key (or dotted word) being read
  auto over = [&](std::string_view what) {
    return InvalidArgumentError(
        StrCat(source, ":", line, ":", column, ": ", what, " (dtf's limit)"));
  };
  size_t i = 0;
  auto advance = [&](size_t n) {
    for (size_t end = i + n; i < end && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else if ((static_cast<uint8_t>(text[i]) & 0xC0) != 0x80) {
        ++column;  // one per UTF-8 character, as toml++ counts
      }
    }
  };
  auto starts = [&](std::string_view s) {
    return text.substr(i, s.size()) == s;
  };
  while (i < text.size()) {
    const char c = text[i];
    if (c == '#') {
      while (i < text.size() && text[i] != '\n') advance(1);
      continue;
    }
    if (starts("\"\"\"") || starts("'''")) {
      const std::string_view quote = text.substr(i, 3);
      const bool basic = c == '"';
      advance(3);
      while (i < text.size() && !starts(quote))
        advance(basic && text[i] == '\\' ? 2 : 1);
      // A closing quote may be followed by up to two more of its kind.
      advance(3);
      while (i < text.size() && text[i] == c) advance(1);
      continue;
    }
    if (c == '"' || c == '\'') {
      advance(1);
      while (i < text.size() && text[i] != c && text[i] != '\n') {
        advance(c == '"' && text[i] == '\\' ? 2 : 1);
      }
      advance(1);
      continue;
    }
    switch (c) {
      case '[':
      case '{':
        if (++nesting > kMaxTomlNesting) {
          return over(StrCat(
              "arrays, inline tables and table headers nested more than ",
              kMaxTomlNesting, " deep"));
        }
        key_parts = 1;
        break;
      case ']':
      case '}':
        if (nesting > 0) --nesting;
        key_parts = 1;
        break;
      case '.':
        if (++key_parts > kMaxTomlKeyParts) {
          return over(StrCat("a dotted key or table header of more than ",
                             kMaxTomlKeyParts, " parts"));
        }
        break;
      case '=':
      case ',':
      case '\n':
        key_parts = 1;
        break;
      default:
        break;
    }
    advance(1);
  }
  return OkStatus();
}

}  // namespace dtf::toml_util
