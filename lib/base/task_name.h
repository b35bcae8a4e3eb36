// A task of a cluster by name: its role and its index ("ps:0", "worker:1",
// "chief:0"), as TensorFlow's cluster specs, dtf's logs, run records,
// `dtf status` and `dtf logs` spell it. The one role enum and task-name type
// of launch and runtime; nothing else builds or parses these names by hand.
#pragma once

#include <compare>
#include <optional>
#include <string>
#include <string_view>

#include "lib/base/status.h"

namespace dtf {

// A task's job, with TensorFlow's job names. A launch plan has only ps and
// worker tasks (worker 0 is the chief); a cluster given as TF_CONFIG may
// also name a chief and evaluators.
enum class Role { kPs, kWorker, kChief, kEvaluator };

inline constexpr Role kRoles[] = {Role::kPs, Role::kWorker, Role::kChief,
                                  Role::kEvaluator};

// "ps", "worker", "chief" or "evaluator".
std::string_view RoleName(Role role);
// The role RoleName gives `name`; nullopt for any other text.
std::optional<Role> ParseRoleName(std::string_view name);
// As ParseRoleName; the error names `text` and the four names.
StatusOr<Role> ParseRole(std::string_view text);
// "ps, worker, chief, evaluator": for error messages.
std::string_view RoleList();

struct TaskName {
  Role role = Role::kWorker;
  int index = 0;

  // "worker:1".
  std::string ToString() const;
  // "worker-1": a file or directory name (run directories, pod names).
  std::string DirName() const;
  bool operator==(const TaskName&) const = default;
  auto operator<=>(const TaskName&) const = default;
};

// "ps:0", "worker:3", "chief:0"; the index is a non-negative decimal. The
// error quotes `text` and says what is wrong with it.
StatusOr<TaskName> ParseTaskName(std::string_view text);

// The task at the index the decimal `text` gives in a cluster's tasks
// numbered parameter servers first, then workers (`ps` and `workers` of
// them: an Indexed Job's pods). InvalidArgument names `what` and quotes
// `text`.
StatusOr<TaskName> TaskAtIndex(std::string_view what, std::string_view text,
                               int ps, int workers);

// Whether `name` names a task of `role` ("worker:2" is one of kWorker's),
// without parsing the index.
bool IsTaskOf(std::string_view name, Role role);

}  // namespace dtf
