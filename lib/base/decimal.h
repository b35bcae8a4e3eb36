// Strict parsing of the non-negative decimals that names and addresses hold
// (task indices, ports): digits only, no sign, no spaces, no leading '+'.
#pragma once

#include <cctype>
#include <charconv>
#include <cstdint>
#include <string_view>
#include <system_error>

namespace dtf {

// Sets `*value` and returns true when `s` is a non-negative decimal without
// sign or spaces, at most `max`; otherwise returns false and leaves `*value`.
inline bool ParseDecimal(std::string_view s, int64_t max, int64_t* value) {
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s.front()))) {
    return false;
  }
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v > max) return false;
  *value = v;
  return true;
}

}  // namespace dtf
