// Limits on TOML text checked before a parser sees it: toml++ recurses on
// the parts of a dotted key and on nested arrays and inline tables, so a
// document with thousands of either would overflow the stack. Needs no
// TOML parser.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "lib/base/status.h"

namespace dtf::toml_util {

// The largest TOML document dtf reads (job files, launch profiles).
inline constexpr size_t kMaxTomlBytes = size_t{4} << 20;  // 4 MiB
// The most parts one key may have: `a.b.c` (a key or a table header) has 3.
inline constexpr int kMaxTomlKeyParts = 32;
// The deepest nesting of arrays and inline tables (`[` and `{`) in a value;
// a table header's own brackets count too.
inline constexpr int kMaxTomlNesting = 32;

// OK when `text` is within the limits above; otherwise InvalidArgument
// "<source>:<line>:<col>: what is over which limit", pointing at the byte
// that went over. Strings and comments are skipped as TOML reads them.
Status CheckTomlLimits(std::string_view text, const std::string& source);

}  // namespace dtf::toml_util
