// TOML text for strings and keys, for code that writes TOML (a schema, a
// job file, a scaffold). Needs no TOML parser.
#pragma once

#include <string>
#include <string_view>

namespace dtf::toml_util {

// `d` as a TOML float literal that reads back to exactly `d`: the shortest
// round-trip decimal, with ".0" added where it would otherwise read as an
// integer (TOML has no "1" float).
std::string Float(double d);

// `s` as a TOML basic string: quoted, with quotes, backslashes and control
// characters escaped.
std::string Quote(std::string_view s);

// `key` as one component of a dotted key: bare when TOML allows, else quoted.
std::string KeyPart(std::string_view key);

}  // namespace dtf::toml_util
