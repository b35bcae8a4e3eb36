// TOML text for strings and keys, for code that writes TOML (a schema, a
// job file, a scaffold). Needs no TOML parser.
#pragma once

#include <string>
#include <string_view>

namespace dtf::toml_util {

// `s` as a TOML basic string: quoted, with quotes, backslashes and control
// characters escaped.
std::string Quote(std::string_view s);

// `key` as one component of a dotted key: bare when TOML allows, else quoted.
std::string KeyPart(std::string_view key);

}  // namespace dtf::toml_util
