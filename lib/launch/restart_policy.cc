#include "lib/launch/restart_policy.h"

#include "lib/base/strings.h"

namespace dtf::launch {

TaskEndAction OnTaskEnded(const Plan& plan, const TaskPlan& task, bool clean,
                          bool chief_exited, int restarts) {
  if (task.chief) return TaskEndAction::kChiefExited;
  if (clean || chief_exited) return TaskEndAction::kNone;
  if (plan.allreduce()) return TaskEndAction::kFailAllreduce;
  if (restarts < plan.max_restarts) return TaskEndAction::kRestart;
  if (task.role == "worker") return TaskEndAction::kGoOn;
  return TaskEndAction::kFail;
}

std::string RestartNote(const Plan& plan, const TaskPlan& task,
                        std::string_view how, int restarts) {
  return StrCat(task.name(), " ", how, "; starting it again (", restarts + 1,
                " of ", plan.max_restarts, " restarts)");
}

}  // namespace dtf::launch
