// What each task of a dtf run on Spark runs. The run's driver
// (lib/launch/spark/spark_driver.h) starts one barrier stage of ps + workers
// tasks; each picks a free port on its executor, learns every task's
// address from the barrier context (allGather, in partition order) and
// runs `dtf task spark ... --task-id P --addresses h:p,...` (SparkTaskArgv
// plus those two), which becomes that task's `dtf serve`
// (MakeSparkServeCommand): partitions 0..ps-1 are the parameter servers,
// the rest the workers, the first of them the chief. RunSparkTask runs it
// and records its end in the run directory (shared storage) as every
// backend's tasks do.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/base/task_name.h"
#include "lib/launch/process.h"

namespace dtf::launch::spark {

// The run, as every task of it sees it.
struct SparkTaskSpec {
  std::string binary;   // the dtf binary on the executor
  std::string job;      // the job file there
  std::string run_dir;  // <runs dir>/<run id>, shared: secret, tls/, tasks
  std::string run_id;
  int ps = 1;
  int workers = 2;
  int threads = 0;
  std::vector<std::string> sets;  // "section.key=value", to every task
  bool resume = false;            // every task gets --restore
  bool tls = false;               // --tls-dir <run dir>/tls
  // --s3-credentials <run dir>/s3-credentials (the tasks' S3 settings)
  bool s3 = false;
  std::string metrics_out;  // the chief's --metrics-out; "" for none
  // A batch run (dtf predict --profile): workers only, each running the
  // command the plan in <run dir>/plan.json gives it, to its end.
  bool batch = false;
  // Filled in by the barrier task: its partition and every task's
  // "host:port", in partition order.
  int task_id = -1;
  std::vector<std::string> addresses;
};

// `dtf task spark` with every field of `spec` but task_id and addresses,
// which the driver's barrier task appends (--task-id, --addresses); the
// first element is `spec.binary`.
std::vector<std::string> SparkTaskArgv(const SparkTaskSpec& spec);

struct SparkServeCommand {
  TaskName task;
  std::string host;  // from its address
  std::vector<std::string> argv;
  std::string dir;  // <run dir>/<role>-<index>
  std::string stdout_file;
  std::string stderr_file;
  std::string exit_file;
};

// The `dtf serve` of partition spec.task_id. InvalidArgument when the
// addresses are not one "host:port" per task or the task id is out of
// range.
StatusOr<SparkServeCommand> MakeSparkServeCommand(const SparkTaskSpec& spec);

// A batch run's task: worker spec.task_id running
// `commands[spec.task_id]` (the plan's command of each worker, in index
// order) with its program replaced by spec.binary (the dtf running this,
// which may be the shipped copy of the plan's binary), in its task
// directory. InvalidArgument when the spec is not a batch one or
// `commands` does not hold one command per worker.
StatusOr<SparkServeCommand> MakeSparkBatchCommand(
    const SparkTaskSpec& spec,
    const std::vector<std::vector<std::string>>& commands);

// Runs `command` as a child (its own process group, dying with this
// process): makes its directory, writes the executor's host to <dir>/node,
// sends SIGTERM once `*cancel` turns true (this task killed by Spark), waits
// and writes <dir>/exit.json: "exited" for status 0, "stopped" after a
// cancel, else "failed". Returns how it ended.
StatusOr<ExitInfo> RunSparkTask(const SparkServeCommand& command,
                                const std::atomic<bool>* cancel);

}  // namespace dtf::launch::spark
