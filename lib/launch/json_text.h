// JSON text of the launcher's records (plan.json, tasks.json, exit.json,
// `dtf status --json`, the env cache) whatever bytes their strings hold.
// nlohmann's dump throws on a string that is not valid UTF-8 (a path in a
// directory named in Latin-1, a task's error text); these never throw.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace dtf::launch {

// `j` indented by 2, with a newline at the end. A byte that is not part of
// valid UTF-8 is written as U+FFFD.
std::string JsonText(const nlohmann::ordered_json& j);

// The first string of `j` (a value or an object key, in document order)
// that is not valid UTF-8, as "<JSON pointer>: \"<the string, bad bytes
// escaped as \\xNN>\""; nullopt when every string is valid.
std::optional<std::string> FirstNonUtf8(const nlohmann::ordered_json& j);

}  // namespace dtf::launch
