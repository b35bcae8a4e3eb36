// How a run is carried out and how it ended, whatever its backend
// (lib/launch/backend.h): what StartRun and StartDetached take and give.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "lib/base/status.h"
#include "lib/launch/plan.h"
#include "lib/launch/run_state.h"

namespace dtf::launch {

enum class Stream { kStdout, kStderr };

struct RunOptions {
  // Each line a task writes, soon after it is written (for foreground runs).
  std::function<void(const TaskPlan& task, Stream stream,
                     std::string_view line)>
      on_output;
  // The launcher's own notes: tasks started, ready, exited, stopped.
  std::function<void(std::string_view)> on_note;
  // When it becomes true (a signal handler may set it), every task is
  // stopped and the run ends Cancelled. May be null.
  const std::atomic<bool>* cancel = nullptr;
  // How long a task has to write its ready file. Default 120 s.
  std::chrono::milliseconds start_timeout{120000};
  // How long tasks get to exit after SIGTERM before SIGKILL, and to exit on
  // their own after the chief did. Default 10 s.
  std::chrono::milliseconds grace{10000};
  // How long the whole run may take, from its start: then every task is
  // stopped as by Stop (the chief, sent SIGTERM, writes its checkpoint) and
  // the run ends DeadlineExceeded, saying so. 0 (the default): no deadline.
  std::chrono::milliseconds deadline{0};
  // How often the run is looked at. Default 50 ms.
  std::chrono::milliseconds poll{50};
  // Lines of a failed task's stderr quoted in the failure. Default 20.
  size_t failure_lines = 20;
  // Recorded in tasks.json: the run is carried out by a supervisor process
  // (StartDetached sets it).
  bool detached = false;

  // Runs on hosts reached over SSH (lib/launch/ssh/ssh_backend.h).
  struct SshOptions {
    // Record host keys that known_hosts lacks (first contact) instead of
    // failing.
    bool accept_new_host_keys = false;
    // The preflight's table, once it is done.
    std::function<void(std::string_view table)> on_preflight;
    // The ':'-separated directories objcopy is looked for in; when it is
    // there, the shipped binary loses its debug sections
    // (pack::CanStripDebug). cmd/ passes $PATH, or "/usr/bin:/bin" when it
    // is unset. Default "": the binary is shipped as it is.
    std::string search_path;
  } ssh;
};

// How a run ended.
struct RunOutcome {
  // OK when the chief exited 0 and no task failed; else why not, naming
  // the task: Aborted (a task failed), DeadlineExceeded (a task never
  // became ready), Cancelled (interrupted, or stopped by `dtf stop`), or
  // the error that kept a task from starting.
  Status status;
  // The chief's exit code as a shell reports it, when the run ended by the
  // chief exiting (not when it was stopped because of another task, a
  // timeout or an interrupt).
  std::optional<int> exit_code;
  // The run state recorded in tasks.json (a final one: IsFinal).
  RunState state = RunState::kFailed;
};

}  // namespace dtf::launch
