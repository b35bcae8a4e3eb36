// A task's role in a launch plan: a parameter server or a worker (worker 0
// is the chief).
#pragma once

#include <optional>
#include <string_view>

namespace dtf::launch {

enum class Role { kPs, kWorker };

// "ps", "worker": as task names ("ps:0"), directories ("ps-0"), plan.json
// and `dtf serve --role` spell it.
constexpr std::string_view RoleName(Role role) {
  return role == Role::kPs ? "ps" : "worker";
}

// The role RoleName gives `name`; nullopt for any other text.
constexpr std::optional<Role> ParseRoleName(std::string_view name) {
  if (name == "ps") return Role::kPs;
  if (name == "worker") return Role::kWorker;
  return std::nullopt;
}

}  // namespace dtf::launch
