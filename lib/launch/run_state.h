// The states of a launched run and of its tasks, as tasks.json, exit.json
// and `dtf status` write them (docs/launch.md). The text forms below are the
// only spelling of these states; files and output use exactly them.
#pragma once

#include <optional>
#include <string_view>

namespace dtf::launch {

// A task's state.
enum class TaskState {
  kStarting,  // "starting": spawned, no ready file yet
  kRunning,   // "running": wrote its ready file
  kExited,    // "exited": ended with status 0
  kFailed,    // "failed": non-zero status, or a signal before the run ended
  kStopped,   // "stopped": stopped by dtf
  kLost,      // "lost": gone, its status unknown
  kReserved,  // "reserved": a worker slot not started (dtf scale starts it)
};

// A run's state.
enum class RunState {
  kStarting,   // "starting": tasks being started
  kRunning,    // "running": every task started
  kSucceeded,  // "succeeded": the chief exited with status 0
  kFailed,     // "failed": a task failed the run
  kStopped,    // "stopped": stopped by dtf (`dtf stop`, a signal)
};

// The text form of `state` ("exited", "succeeded", ...).
std::string_view TaskStateName(TaskState state);
std::string_view RunStateName(RunState state);

// The state whose text form is `name`; nullopt for any other text.
std::optional<TaskState> ParseTaskState(std::string_view name);
std::optional<RunState> ParseRunState(std::string_view name);

// Whether a task in `state` has ended (exited, failed, stopped or lost)
// or is a reserved slot that no process has run in: none is running.
bool IsFinal(TaskState state);
// Whether a run in `state` is over: succeeded, failed or stopped.
bool IsFinal(RunState state);

}  // namespace dtf::launch
