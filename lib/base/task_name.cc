#include "lib/base/task_name.h"

#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "lib/base/decimal.h"

namespace dtf {

using absl::StrCat;

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kPs:
      return "ps";
    case Role::kWorker:
      return "worker";
    case Role::kChief:
      return "chief";
    case Role::kEvaluator:
      return "evaluator";
  }
  return "unknown";
}

std::optional<Role> ParseRoleName(std::string_view name) {
  for (Role role : kRoles) {
    if (name == RoleName(role)) return role;
  }
  return std::nullopt;
}

std::string_view RoleList() { return "ps, worker, chief, evaluator"; }

StatusOr<Role> ParseRole(std::string_view text) {
  std::optional<Role> role = ParseRoleName(text);
  if (!role) {
    return InvalidArgumentError(
        StrCat("task type \"", text, "\" is not one of ", RoleList()));
  }
  return *role;
}

std::string TaskName::ToString() const {
  return StrCat(RoleName(role), ":", index);
}

std::string TaskName::DirName() const {
  return StrCat(RoleName(role), "-", index);
}

StatusOr<TaskName> ParseTaskName(std::string_view text) {
  size_t colon = text.find(':');
  if (colon == std::string_view::npos) {
    return InvalidArgumentError(
        StrCat("task \"", text, "\": expected type:index, as \"worker:0\""));
  }
  std::string_view type = text.substr(0, colon);
  std::string_view index_text = text.substr(colon + 1);
  std::optional<Role> role = ParseRoleName(type);
  if (!role) {
    return InvalidArgumentError(StrCat("task \"", text, "\": type \"", type,
                                       "\" is not one of ", RoleList()));
  }
  int64_t index = 0;
  if (!ParseDecimal(index_text, std::numeric_limits<int>::max(), &index)) {
    return InvalidArgumentError(StrCat("task \"", text, "\": index \"",
                                       index_text,
                                       "\" is not a non-negative integer"));
  }
  return TaskName{*role, static_cast<int>(index)};
}

StatusOr<TaskName> TaskAtIndex(std::string_view what, std::string_view text,
                               int ps, int workers) {
  const int total = ps + workers;
  int64_t index = 0;
  if (!ParseDecimal(text, total - 1, &index)) {
    return InvalidArgumentError(
        StrCat(what, ": expected an index from 0 to ", total - 1,
               " (ps first, then workers), got \"", text, "\""));
  }
  const int i = static_cast<int>(index);
  return i < ps ? TaskName{Role::kPs, i} : TaskName{Role::kWorker, i - ps};
}

bool IsTaskOf(std::string_view name, Role role) {
  std::string_view prefix = RoleName(role);
  return name.size() > prefix.size() && name.starts_with(prefix) &&
         name[prefix.size()] == ':';
}

}  // namespace dtf
