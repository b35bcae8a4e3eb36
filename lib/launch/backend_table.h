// Reading a backend's own table of a profile ([slurm], [spark]): what the
// backends' profile readers share. Errors are InvalidArgument
// "<file>:<line>:<col>: <key>: what is wrong", as the Reader words them.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

#include "lib/base/status.h"
#include "lib/base/toml_util.h"

namespace dtf::launch {

// "<file>:<line>:<col>" of `node`: where a profile's key was, as the
// backends' tables keep it for later messages (their `where` maps).
std::string WhereOf(const toml_util::Reader& reader, const toml::node& node);

// A non-empty string holding no line break or NUL byte.
StatusOr<std::string> ReadOneLine(const toml_util::Reader& reader,
                                  const toml::node& node, std::string_view key);

// The table `name` of `profile`: nullptr when the profile has none; an
// error when it is not a table or holds a key not in `known` (naming the
// closest one).
StatusOr<const toml::table*> BackendTable(
    const toml_util::Reader& reader, const toml_util::Table& profile,
    std::string_view name, std::initializer_list<std::string_view> known);

}  // namespace dtf::launch
