#include "lib/launch/pack/entry_name.h"

#include <string_view>

namespace dtf::pack {
namespace {

// Whether `s` is well-formed UTF-8 (RFC 3629: no overlong forms, no
// surrogates, nothing past U+10FFFF), as JSON strings must be.
bool EntryNameIsUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      n = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    if (s.size() - i - 1 < n) return false;
    for (size_t k = 1; k <= n; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return false;
    }
    i += n + 1;
  }
  return true;
}

}  // namespace

Status CheckEntryName(std::string_view name) {
  if (name.empty()) return InvalidArgumentError("empty entry name");
  if (name.front() == '/' || name.back() == '/' ||
      name.find('\\') != std::string_view::npos ||
      name.find('\0') != std::string_view::npos) {
    return InvalidArgumentError("not a relative '/'-separated entry name");
  }
  if (!EntryNameIsUtf8(name)) {
    return InvalidArgumentError("entry names are UTF-8; this is not");
  }
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string_view::npos) end = name.size();
    const std::string_view part = name.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") {
      return InvalidArgumentError(
          "entry names have no empty, '.' or '..' components");
    }
    start = end + 1;
  }
  return OkStatus();
}

}  // namespace dtf::pack
