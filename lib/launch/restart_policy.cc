#include "lib/launch/restart_policy.h"

#include "lib/base/strings.h"
#include "lib/launch/allreduce_members.h"

namespace dtf::launch {

TaskEndAction OnTaskEnded(const Plan& plan, const TaskPlan& task, bool clean,
                          bool chief_exited, int restarts, int live_workers) {
  if (plan.batch) return clean ? TaskEndAction::kNone : TaskEndAction::kFail;
  if (task.chief) return TaskEndAction::kChiefExited;
  if (clean || chief_exited) return TaskEndAction::kNone;
  if (plan.allreduce()) {
    if (task.role == Role::kWorker && plan.min_workers > 0 &&
        live_workers >= plan.min_workers) {
      return TaskEndAction::kResizeAll;
    }
    return restarts < plan.max_restarts ? TaskEndAction::kRestartAll
                                        : TaskEndAction::kFailAllreduce;
  }
  if (task.role == Role::kWorker && plan.min_workers > 0 && live_workers >= 0) {
    if (live_workers >= plan.min_workers) return TaskEndAction::kGoOn;
    return restarts < plan.max_restarts ? TaskEndAction::kRestart
                                        : TaskEndAction::kFailBelowMin;
  }
  if (restarts < plan.max_restarts) return TaskEndAction::kRestart;
  if (task.role == Role::kWorker) return TaskEndAction::kGoOn;
  return TaskEndAction::kFail;
}

std::string RestartNote(const Plan& plan, const TaskPlan& task,
                        std::string_view how, int restarts) {
  return StrCat(task.name(), " ", how, "; starting it again (", restarts + 1,
                " of ", plan.max_restarts, " restarts)");
}

std::string RestartAllNote(const Plan& plan, const TaskPlan& task,
                           std::string_view how, int restarts) {
  return StrCat("task ", task.name(), " ", how,
                "; an allreduce run restarts every worker from the last "
                "checkpoint (",
                restarts + 1, " of ", plan.max_restarts, " restarts)");
}

std::string ResizeNote(const Plan& plan, const TaskPlan& task,
                       std::string_view how, const std::vector<int>& members) {
  const std::string list = MembersList(members);
  const int n = int(members.size());
  return StrCat("task ", task.name(), " ", how, "; ", n, " worker",
                n == 1 ? " is" : "s are",
                " left (min_workers = ", plan.min_workers,
                "): every worker starts again without it "
                "from the last checkpoint, at ",
                n, " rank", n == 1 ? "" : "s", " (worker", n == 1 ? " " : "s ",
                list, ")");
}

std::string BelowMinWorkers(const Plan& plan, const TaskPlan& task,
                            std::string_view how, int live_workers) {
  const std::string why = plan.max_restarts > 0
                              ? StrCat("its ", plan.max_restarts,
                                       " restarts (max_restarts) are used up")
                              : std::string("max_restarts is 0");
  return StrCat("task ", task.name(), " ", how, " before the run ended; ",
                live_workers, " worker", live_workers == 1 ? " is" : "s are",
                " left, fewer than min_workers = ", plan.min_workers, ", and ",
                why, "; stopped the other tasks");
}

std::string AllreduceWorkerLost(const Plan& plan, const TaskPlan& task,
                                std::string_view how) {
  const std::string why = plan.max_restarts > 0
                              ? StrCat("its ", plan.max_restarts,
                                       " restarts (max_restarts) are used up")
                              : std::string("max_restarts is 0");
  return StrCat("task ", task.name(), " ", how,
                " before the run ended; an allreduce run cannot go on "
                "without one of its workers (the others would wait for it "
                "in their collectives for ever), and ",
                why, "; stopped the other tasks");
}

}  // namespace dtf::launch
