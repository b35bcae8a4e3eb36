#include "lib/launch/run_state.h"

namespace dtf::launch {
namespace {

constexpr TaskState kTaskStates[] = {TaskState::kStarting, TaskState::kRunning,
                                     TaskState::kExited,   TaskState::kFailed,
                                     TaskState::kStopped,  TaskState::kLost};
constexpr RunState kRunStates[] = {RunState::kStarting, RunState::kRunning,
                                   RunState::kSucceeded, RunState::kFailed,
                                   RunState::kStopped};

}  // namespace

std::string_view TaskStateName(TaskState state) {
  switch (state) {
    case TaskState::kStarting:
      return "starting";
    case TaskState::kRunning:
      return "running";
    case TaskState::kExited:
      return "exited";
    case TaskState::kFailed:
      return "failed";
    case TaskState::kStopped:
      return "stopped";
    case TaskState::kLost:
      return "lost";
  }
  return "unknown";
}

std::string_view RunStateName(RunState state) {
  switch (state) {
    case RunState::kStarting:
      return "starting";
    case RunState::kRunning:
      return "running";
    case RunState::kSucceeded:
      return "succeeded";
    case RunState::kFailed:
      return "failed";
    case RunState::kStopped:
      return "stopped";
  }
  return "unknown";
}

std::optional<TaskState> ParseTaskState(std::string_view name) {
  for (TaskState s : kTaskStates) {
    if (TaskStateName(s) == name) return s;
  }
  return std::nullopt;
}

std::optional<RunState> ParseRunState(std::string_view name) {
  for (RunState s : kRunStates) {
    if (RunStateName(s) == name) return s;
  }
  return std::nullopt;
}

bool IsFinal(TaskState state) {
  return state != TaskState::kStarting && state != TaskState::kRunning;
}

bool IsFinal(RunState state) {
  return state != RunState::kStarting && state != RunState::kRunning;
}

}  // namespace dtf::launch
