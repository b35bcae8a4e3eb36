// The names of an exported model's files (docs/formats/checkpoint.md),
// shared by its writers and readers.
#pragma once

#include <string_view>

namespace dtf::runtime {

inline constexpr std::string_view kExportDir = "model";
inline constexpr std::string_view kModelToml = "model.toml";
inline constexpr std::string_view kVariablesFile = "variables.dtf";

}  // namespace dtf::runtime
