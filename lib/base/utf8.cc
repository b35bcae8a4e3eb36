#include "lib/base/utf8.h"

#include <cstdint>
#include <cstring>

namespace dtf {
namespace {

// Eight ASCII bytes; with `no_nul`, none of them NUL.
inline bool AsciiWord(const unsigned char* p, bool no_nul) {
  uint64_t w;
  std::memcpy(&w, p, sizeof(w));
  constexpr uint64_t kOnes = 0x0101010101010101ULL;
  constexpr uint64_t kHighs = 0x8080808080808080ULL;
  if ((w & kHighs) != 0) return false;
  return !no_nul || ((w - kOnes) & ~w & kHighs) == 0;
}

inline bool IsControl(unsigned char c) { return c < 0x20 || c == 0x7F; }

}  // namespace

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

size_t FindNonUtf8(std::string_view s, Utf8Stop also) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  const bool controls = also == Utf8Stop::kControls;
  const bool nul = also != Utf8Stop::kNothing;
  size_t i = 0;
  while (i < n) {
    if (!controls && n - i >= 8 && AsciiWord(p + i, nul)) {
      i += 8;
      continue;
    }
    const unsigned char c = p[i];
    if (c < 0x80) {
      if ((nul && c == 0) || (controls && IsControl(c))) return i;
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
