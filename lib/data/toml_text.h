// Internal to lib/data: TOML text for strings and keys, shared by the
// job-file reader and SchemaToToml.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>
#include <string_view>
#include <system_error>

#include "absl/strings/str_format.h"

namespace dtf::toml_util {

// `d` as a TOML float literal that reads back to exactly `d`: the shortest
// round-trip decimal, with ".0" added where it would otherwise read as an
// integer (TOML has no "1" float).
inline std::string Float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), d);
  std::string s(buf, ec == std::errc() ? end : buf);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

// `s` as a TOML basic string: quoted, with quotes, backslashes and control
// characters escaped.
inline std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          out += absl::StrFormat("\\u%04X", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// `key` as one component of a dotted key: bare when TOML allows, else quoted.
inline std::string KeyPart(std::string_view key) {
  const bool bare =
      !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
               (c >= '0' && c <= '9') || c == '_' || c == '-';
      });
  return bare ? std::string(key) : Quote(key);
}

}  // namespace dtf::toml_util
