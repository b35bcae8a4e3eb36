// Internal to lib/data: the checks the [features] parser
// (lib/data/feature_parser.h) makes once every feature is read, over the
// whole FeatureSpec, and the keys ("features.numeric[3]") its messages name.
#pragma once

#include <cstddef>
#include <set>
#include <string>

#include "lib/base/status.h"
#include "lib/base/toml_util.h"
#include "lib/data/features.h"

namespace dtf {

// "features.<kind>[<index>]": the key of one element of a [[features.*]]
// array.
std::string FeatureKey(FeatureKind kind, size_t index);

// A date feature's calendar parts become inputs named "<name>/<part>", and
// the model's variables are named after them: InvalidArgument at the other
// feature's name when a feature takes such a name. REQUIRES: every element
// key of `spec` was remembered in `r`.
Status CheckDatePartNames(const toml_util::Reader& r, const FeatureSpec& spec);

// InvalidArgument "feeds nothing: ..." at the first feature that feeds
// neither part of the model nor, by name, another feature (`used`: the
// names that are inputs of others). REQUIRES: as CheckDatePartNames.
Status CheckEveryFeatureFeeds(const toml_util::Reader& r,
                              const FeatureSpec& spec,
                              const std::set<std::string>& used);

}  // namespace dtf
