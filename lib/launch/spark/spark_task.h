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
#include "lib/launch/dir_task_command.h"
#include "lib/launch/process.h"

namespace dtf::launch::spark {

// The run, as every task of it sees it (dir_task_command.h), and what the
// barrier task fills in: its partition and every task's "host:port", in
// partition order.
struct SparkTaskSpec : DirRunSpec {
  int task_id = -1;
  std::vector<std::string> addresses;
};

// `dtf task spark` with every field of `spec` but task_id and addresses,
// which the driver's barrier task appends (--task-id, --addresses); the
// first element is `spec.binary`.
std::vector<std::string> SparkTaskArgv(const SparkTaskSpec& spec);

// A task's command and files; `host` is from its address.
using SparkServeCommand = DirTaskCommand;

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

// Runs `command` as RunDirTask does (dir_task_command.h): `*cancel` turns
// true when Spark kills this task.
StatusOr<ExitInfo> RunSparkTask(const SparkServeCommand& command,
                                const std::atomic<bool>* cancel);

}  // namespace dtf::launch::spark
