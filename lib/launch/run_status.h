// `dtf status`: how a recorded run goes, from its chief when it answers and
// from the processes and records otherwise.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/run_state.h"

namespace dtf::launch {

struct TaskStatusRow {
  std::string task;
  // The recorded state (TaskStateName, lib/launch/run_state.h), or the
  // chief's view of a running task ("starting", "running", "done", ...).
  std::string state;
  std::string address;
  pid_t pid = 0;
  bool alive = false;
  std::optional<int> exit_code;
  // From the chief's heartbeats; unset when the chief did not answer or
  // does not know the task.
  std::optional<int64_t> step;
  std::optional<double> loss;
  std::optional<double> examples_per_sec;
  std::optional<double> seconds_since_heartbeat;
  // The task's resident memory in bytes, as its last heartbeat said.
  std::optional<int64_t> rss_bytes;
  std::optional<int> restarts;
};

// One checkpoint generation of a run
// (lib/runtime/checkpoint/checkpoint_files.h).
struct CheckpointRow {
  std::string path;
  int64_t step = 0;
  // Why it cannot be resumed from (corrupt, another job fingerprint); ""
  // when it can.
  std::string problem;
};

struct RunStatus {
  std::string run_id;
  std::string run_dir;
  RunState state = RunState::kStarting;
  std::optional<int> exit_code;
  std::string message;
  int64_t started_ms = 0;
  std::optional<int64_t> ended_ms;
  bool detached = false;
  // The chief, and whether it answered (chief_error says why not; empty
  // when it was not asked because the run is over).
  std::string chief;
  std::string chief_address;
  bool from_chief = false;
  std::string chief_error;
  // How the chief was reached when not directly ("ssh tunnel to h1").
  std::string chief_via;
  int64_t global_step = 0;
  std::string chief_state;
  std::map<std::string, double> eval_metrics;
  std::vector<TaskStatusRow> tasks;
  // The run's checkpoint generations, newest first, in checkpoint_dir (the
  // job's output directory). CollectRunStatus leaves them empty: reading
  // checkpoints is the runtime's, so the caller (dtf status) fills them;
  // checkpoint_dir "" means they were not looked for.
  std::string checkpoint_dir;
  std::vector<CheckpointRow> checkpoints;

  bool over() const;
};

// Reads the run in `run_dir`, reconciles its records with the processes
// (lib/launch/run_control.h) and, while it runs, asks its chief with
// `deadline`. An unreachable chief is not an error: see chief_error.
StatusOr<RunStatus> CollectRunStatus(const std::string& run_dir,
                                     std::chrono::milliseconds deadline);

// Fixed field order; unknown values are null.
std::string RunStatusToJson(const RunStatus& status);
// A heading and a table of tasks; `now_ms` for the ages shown.
std::string RunStatusToText(const RunStatus& status, int64_t now_ms);

}  // namespace dtf::launch
