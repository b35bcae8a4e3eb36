#include "lib/runtime/cluster/task_state.h"

namespace dtf::runtime {

std::string_view TaskStateName(TaskState state) {
  switch (state) {
    case TaskState::kStarting:
      return "starting";
    case TaskState::kRunning:
      return "running";
    case TaskState::kDone:
      return "done";
    case TaskState::kFailed:
      return "failed";
    case TaskState::kStalled:
      return "stalled";
  }
  return "unknown";
}

std::optional<TaskState> ParseTaskState(std::string_view name) {
  for (TaskState state :
       {TaskState::kStarting, TaskState::kRunning, TaskState::kDone,
        TaskState::kFailed, TaskState::kStalled}) {
    if (name == TaskStateName(state)) return state;
  }
  return std::nullopt;
}

std::string_view RunStateName(RunState state) {
  switch (state) {
    case RunState::kRunning:
      return "running";
    case RunState::kEvaluating:
      return "evaluating";
    case RunState::kFinished:
      return "finished";
  }
  return "unknown";
}

}  // namespace dtf::runtime
