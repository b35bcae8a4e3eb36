// The record of launched runs under .dtf/runs/ (docs/launch.md): written by
// the launcher (or the supervisor of a detached run) and read by
// `dtf status`, `dtf logs` and `dtf stop`. Files are replaced atomically;
// a reader never sees half a file.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/plan.h"
#include "lib/launch/process.h"
#include "lib/launch/run_state.h"

namespace dtf::launch {

struct TaskRecord {
  std::string task;     // "worker:1"
  ProcessId process;    // pid == pgid
  std::string address;  // "host:port", from the ready file once there
  TaskState state = TaskState::kStarting;
  int restarts = 0;  // times the launcher started it again after a failure
};

// tasks.json.
struct RunRecord {
  std::string run_id;
  RunState state = RunState::kStarting;
  // The run's exit code (the chief's) once it ended.
  std::optional<int> exit_code;
  // Why it failed or stopped; "" otherwise.
  std::string message;
  int64_t started_ms = 0;
  std::optional<int64_t> ended_ms;
  // The process that reaps the tasks: the launcher (foreground) or the
  // supervisor of a detached run.
  ProcessId supervisor;
  bool detached = false;
  // What the backend records of what runs the tasks, once it is there
  // (Backend::RecordFields), by key: top-level text keys of tasks.json
  // beside the shared ones (slurm: "slurm_job", the run's job or step,
  // what `dtf stop` cancels). Empty for a backend that records nothing.
  std::map<std::string, std::string> backend;
  std::vector<TaskRecord> tasks;
};

// <task dir>/exit.json.
struct ExitRecord {
  std::string task;
  TaskState state = TaskState::kLost;  // a final state (IsFinal)
  std::optional<int> exit_code;        // unknown for kLost
  int signal = 0;
  int64_t finished_ms = 0;
};

Status WriteRunRecord(const std::string& run_dir, const RunRecord& record);
StatusOr<RunRecord> ReadRunRecord(const std::string& run_dir);
Status WriteExitRecord(const std::string& path, const ExitRecord& record);
// nullopt when the file does not exist (the task has not exited, as far as
// anyone recorded).
StatusOr<std::optional<ExitRecord>> ReadExitRecord(const std::string& path);

// Milliseconds since the epoch, now.
int64_t NowMs();

// The run ids under `runs_dir` (directories holding plan.json, or a
// Kubernetes run's kubernetes.json), oldest first (by start time, then id).
// An absent directory has none.
StatusOr<std::vector<std::string>> ListRuns(const std::string& runs_dir);
// The directory of run `id` (or of a unique id prefix) under `runs_dir`;
// "" means the latest run. NotFound naming `runs_dir` when there is none.
StatusOr<std::string> FindRunDir(const std::string& runs_dir,
                                 const std::string& id);

// Everything recorded about one run.
struct RunView {
  std::string dir;
  Plan plan;
  RunRecord record;
  // By task name, for the tasks that have an exit.json.
  std::map<std::string, ExitRecord> exits;
};
StatusOr<RunView> LoadRun(const std::string& run_dir);

// Whether task `t` of `run` was started: it has a process (local, ssh), or
// the run's Slurm job or step was made (slurm).
bool TaskStarted(const RunView& run, const TaskRecord& t);

}  // namespace dtf::launch
