// The states of a run and of its tasks, as the launcher records them in
// tasks.json and exit.json and as `dtf status` prints them (docs/launch.md).
// Their text forms live here and nowhere else.
#pragma once

#include <optional>
#include <string_view>

namespace dtf::launch {

// A task as the launcher sees it.
enum class TaskState {
  kStarting,  // spawned, no ready file yet
  kRunning,   // its ready file is there
  kExited,    // status 0
  kFailed,    // a non-zero status, or a signal before the run ended
  kStopped,   // stopped by dtf
  kLost,      // gone, its status unknown
};

// A run as a whole.
enum class RunState { kStarting, kRunning, kSucceeded, kFailed, kStopped };

// "starting", "running", "exited", "failed", "stopped", "lost".
std::string_view TaskStateName(TaskState state);
// "starting", "running", "succeeded", "failed", "stopped".
std::string_view RunStateName(RunState state);
// The state a name gives; nullopt for any other text.
std::optional<TaskState> ParseTaskState(std::string_view name);
std::optional<RunState> ParseRunState(std::string_view name);

// Whether the task has ended: exited, failed, stopped or lost.
bool IsFinal(TaskState state);
// Whether the run has ended: succeeded, failed or stopped.
bool IsFinal(RunState state);

}  // namespace dtf::launch
