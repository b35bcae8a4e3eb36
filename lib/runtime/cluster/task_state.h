// The states a task of a distributed run reports to the chief with its
// heartbeats, and the run's state that the chief's Coordinator answers
// `dtf status` with. On the wire (proto/dtf.proto's HeartbeatRequest.state,
// TaskStatus.state, StatusResponse.state) each travels as its name here.
#pragma once

#include <optional>
#include <string_view>

namespace dtf::runtime {

enum class TaskState {
  kStarting,  // not heard from yet, or setting up
  kRunning,   // training (or serving, for a parameter server)
  kDone,      // finished training
  kFailed,    // training ended with an error
  kStalled,   // the watchdog found no step finished for the stall timeout
};

// "starting", "running", "done", "failed" or "stalled".
std::string_view TaskStateName(TaskState state);
// The state TaskStateName gives `name`; nullopt for any other text.
std::optional<TaskState> ParseTaskState(std::string_view name);

enum class RunState {
  kRunning,     // training
  kEvaluating,  // the chief evaluates
  kFinished,    // training ended
};

// "running", "evaluating" or "finished".
std::string_view RunStateName(RunState state);

}  // namespace dtf::runtime
