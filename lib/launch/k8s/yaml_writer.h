// A small deterministic YAML writer for Kubernetes manifests: block
// mappings and sequences in the order given, every string double-quoted
// with JSON's escapes (a valid YAML scalar that never reads as a number,
// boolean or null), empty containers as {} and []. The same value always
// gives the same bytes.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace dtf::launch::k8s {

using Manifest = nlohmann::ordered_json;

// One YAML document for `value` (an object), ending in a newline.
std::string ToYaml(const Manifest& value);

}  // namespace dtf::launch::k8s
