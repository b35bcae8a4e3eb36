// Well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing
// past U+10FFFF), as JSON text, protobuf strings and TOML require.
#pragma once

#include <cstddef>
#include <string_view>

namespace dtf {

// What else than a byte outside well-formed UTF-8 FindNonUtf8 stops at.
enum class Utf8Stop {
  kNothing,   // NUL and control characters are valid UTF-8
  kNul,       // also the first NUL byte
  kControls,  // also the first byte below 0x20 or 0x7F (tab included)
};

// Length of the well-formed multi-byte UTF-8 sequence at p[0, n) (n > 0,
// p[0] >= 0x80), or 0 when there is none.
size_t Utf8SequenceLength(const unsigned char* p, size_t n);

// Offset of the first byte of `s` that is not part of well-formed UTF-8,
// or that `also` names; npos when there is none. ASCII runs are skipped
// eight bytes at a time.
size_t FindNonUtf8(std::string_view s, Utf8Stop also = Utf8Stop::kNothing);

inline bool IsUtf8(std::string_view s) {
  return FindNonUtf8(s) == std::string_view::npos;
}

}  // namespace dtf
