// The task's side of the backends whose tasks report through files in a
// run directory shared with the launcher (the Slurm and Spark backends;
// the launcher's side is dir_tasks.h): the run as every task sees it, the
// `dtf task <backend>` command the engine starts for each task, the
// `dtf serve` (or batch command) it becomes, and running that while
// recording its end in the task's directory.
#pragma once

#include <atomic>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/base/status.h"
#include "lib/base/task_name.h"
#include "lib/launch/process.h"

namespace dtf::launch {

// The run, as every task of it sees it. Paths are absolute and the same
// wherever a task runs (shared storage).
struct DirRunSpec {
  std::string binary;   // the dtf binary where the tasks run
  std::string job;      // the job file there
  std::string run_dir;  // <runs dir>/<run id>: secret, tls/, task dirs
  std::string run_id;
  int ps = 1;
  int workers = 2;
  int threads = 0;                // compute threads per task; 0: each decides
  std::vector<std::string> sets;  // "section.key=value", to every task
  bool resume = false;            // every task gets --restore
  bool tls = false;               // every task gets --tls-dir <run dir>/tls
  // Every task gets --s3-credentials <run dir>/s3-credentials (the tasks'
  // S3 settings and credentials, written there by the launcher).
  bool s3 = false;
  // A batch run: workers only (ps = 0), each running the command the plan
  // in <run dir>/plan.json gives it, to its end.
  bool batch = false;
  std::string metrics_out;  // the chief's --metrics-out; "" for none
  // Workers started at launch (Plan::launch_workers): the worker slots
  // from this index up are reserved for `dtf scale`, and every task's
  // `dtf serve` gets --started-workers. 0: every slot is started.
  int started_workers = 0;
};

// Whether `task` is a worker slot reserved at launch (spec.started_workers).
inline bool ReservedSlot(const DirRunSpec& spec, const TaskName& task) {
  return task.role == Role::kWorker && spec.started_workers > 0 &&
         task.index >= spec.started_workers;
}

// `<binary> task <backend> --job ... --threads N`, then `own_flags` (the
// backend's), then --set, --restore, --tls, --s3, --batch as the spec says,
// then `own_switches`, then --metrics-out.
std::vector<std::string> DirTaskArgv(
    const DirRunSpec& spec, std::string_view backend,
    const std::vector<std::string>& own_flags,
    const std::vector<std::string>& own_switches = {});

// One task's command and where its files go.
struct DirTaskCommand {
  TaskName task;
  std::string host;  // where it runs
  std::vector<std::string> argv;
  // Set on top of the task's environment.
  std::vector<std::pair<std::string, std::string>> env;
  // <run dir>/<role>-<index> and the files in it.
  std::string dir;
  std::string stdout_file;
  std::string stderr_file;
  std::string exit_file;
};

// `task`'s command on `host` with its files under spec.run_dir; no argv.
DirTaskCommand DirTaskFiles(const DirRunSpec& spec, TaskName task,
                            std::string host);

// The `dtf serve` of `command.task` in a cluster of `ps` and `workers`
// ("h:p,h:p"), up to its --restore: the backend may add its own flags,
// then AppendServeTail.
std::vector<std::string> DirServeArgv(const DirRunSpec& spec,
                                      const DirTaskCommand& command,
                                      const std::string& ps,
                                      const std::string& workers);
// The chief's --metrics-out, then --tls-dir and --tls-task-names (the
// certificates were made before the engine placed the tasks: each names
// its task, which the peers check), then --s3-credentials.
void AppendServeTail(const DirRunSpec& spec, const TaskName& task,
                     std::vector<std::string>* argv);

// InvalidArgument unless `commands` (the plan's command of each worker of
// a batch run, in index order) holds one command per worker.
Status CheckBatchCommands(
    const DirRunSpec& spec,
    const std::vector<std::vector<std::string>>& commands);
// A batch run's worker `task`: its command of `commands`. InvalidArgument
// as CheckBatchCommands, or when its command is empty.
StatusOr<std::vector<std::string>> DirBatchArgv(
    const DirRunSpec& spec, const TaskName& task,
    const std::vector<std::vector<std::string>>& commands);

// Runs `command` as a child of this process: creates its directory (an
// error adding `shared_hint`, which says what must be shared, when it
// cannot), writes the host to <dir>/node (kNodeFile; best effort), starts
// it (Spawn: its own process group, dying with this process; output to its
// stdout and stderr files, appended to with `append`), sends it SIGTERM
// once `*cancel` (may be null) turns true (this task signalled by the
// engine), waits for it and writes its exit file: "exited" for status 0,
// else "stopped" once `*cancel` turned true, else "failed". Returns how it
// ended; an error when it could not be started or its end not recorded.
StatusOr<ExitInfo> RunDirTask(const DirTaskCommand& command,
                              const std::atomic<bool>* cancel, bool append,
                              std::string_view shared_hint);

// A reserved worker slot's wait in its place among the engine's tasks:
// true once the launcher has written <dir>/start (kStartFile: `dtf scale`
// starts it); false, after writing its exit file as "reserved" (never
// started), once the chief's exit file is there (the run is over), or,
// without a record unless the chief's is there, at once when `*cancel`
// (may be null) turns true. Polls every 200 ms.
StatusOr<bool> AwaitSlotStart(const DirRunSpec& spec,
                              const DirTaskCommand& command,
                              const std::atomic<bool>* cancel);

// Records that `command` failed before it started (its host could not
// reach the job's data): writes the host to <dir>/node, appends `why` to
// its stderr file and writes its exit file ("failed", status 1), as
// RunDirTask would for a command that failed so.
Status RecordDirTaskFailure(const DirTaskCommand& command,
                            std::string_view why);

}  // namespace dtf::launch
