// Well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing
// past U+10FFFF), as JSON text, protobuf strings and TOML require.
#pragma once

#include <cstddef>
#include <string_view>

namespace dtf {

// Length of the well-formed multi-byte UTF-8 sequence at p[0, n) (n > 0,
// p[0] >= 0x80), or 0 when there is none.
size_t Utf8SequenceLength(const unsigned char* p, size_t n);

// Offset of the first byte of `s` that is not part of well-formed UTF-8;
// npos when there is none.
size_t FindNonUtf8(std::string_view s);

inline bool IsUtf8(std::string_view s) {
  return FindNonUtf8(s) == std::string_view::npos;
}

}  // namespace dtf
