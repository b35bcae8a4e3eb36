#include "lib/base/utf8.h"

namespace dtf {

size_t Utf8SequenceLength(const unsigned char* p, size_t n) {
  const unsigned c = p[0];
  size_t len;
  unsigned lo = 0x80, hi = 0xBF;  // bounds of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // past U+10FFFF
  } else {
    return 0;
  }
  if (n < len || p[1] < lo || p[1] > hi) return 0;
  for (size_t k = 2; k < len; ++k) {
    if ((p[k] & 0xC0) != 0x80) return 0;
  }
  return len;
}

size_t FindNonUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    const size_t len = Utf8SequenceLength(p + i, n - i);
    if (len == 0) return i;
    i += len;
  }
  return std::string_view::npos;
}

}  // namespace dtf
