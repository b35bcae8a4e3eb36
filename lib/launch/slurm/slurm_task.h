// What each task of a dtf run under Slurm runs: the batch script's srun
// starts one `dtf task slurm ...` per task (SlurmTaskArgv), which reads
// Slurm's environment and becomes that task's `dtf serve` (SlurmServe
// Command): its role and index from SLURM_PROCID, every task's address from
// the step's nodes, its GPU from its place on its node. In a batch run
// (dtf predict --profile) it becomes instead the command the plan gives
// worker SLURM_PROCID (MakeSlurmBatchCommand).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/dir_task_command.h"
#include "lib/launch/slurm/slurm_env.h"

namespace dtf::launch::slurm {

// The run, as every task of it sees it (dir_task_command.h), and what
// Slurm's tasks need besides.
struct SlurmRunSpec : DirRunSpec {
  int base_port = 29500;
  int gpus_per_node = 0;  // 0: workers compute as the job says
  // The profile allows restarts (max_restarts > 0): the batch script's
  // srun leaves the other tasks running when one fails
  // (--kill-on-bad-exit=0), and the launcher starts the failed one again
  // in a job step of its own. Not a flag of the task command.
  bool restarts = false;
  // >= 0: this task is started again, in a one-task job step of its own
  // (srun --overlap), in place of task id `replace` of the run's first
  // step, whose place it reads from that task's directory
  // (step_record.h); its output is appended to that task's logs. -1: a
  // task of the first step.
  int replace = -1;
  // The profile's [env]: exported by the batch script before srun, which
  // passes the environment on to every task. Names are checked by the
  // profile (letters, digits, '_').
  std::vector<std::pair<std::string, std::string>> env;
};

// The command srun runs for every task: `<binary> task slurm --job ...`,
// each field of `spec` as a flag (docs/launch.md, "Slurm").
std::vector<std::string> SlurmTaskArgv(const SlurmRunSpec& spec);

// One task's `dtf serve`: its command and files (a worker with a GPU gets
// CUDA_VISIBLE_DEVICES in `env`), and its slot.
struct SlurmServeCommand : DirTaskCommand {
  SlurmTaskSlot slot;  // role, index, host, port, GPU
};

// The `dtf serve` of the task whose Slurm environment is `env`. A worker
// given a GPU gets --set train.device=cuda and CUDA_VISIBLE_DEVICES naming
// that GPU: the entry at its GPU index in the CUDA_VISIBLE_DEVICES Slurm
// set for the step, else the index itself. InvalidArgument naming the
// variable for an environment that does not fit the run (ReadSlurmStep,
// LayoutSlurmTasks; fewer visible GPUs than gpus_per_node).
StatusOr<SlurmServeCommand> MakeSlurmServeCommand(const SlurmRunSpec& spec,
                                                  const Environment& env);

// A batch run's task whose Slurm environment is `env`: worker SLURM_PROCID
// running `commands[SLURM_PROCID]` (the plan's command of each worker, in
// index order), in its task directory; a worker given a GPU gets
// CUDA_VISIBLE_DEVICES naming it, as above. InvalidArgument when the spec
// is not a batch one (parameter servers), when `commands` does not hold
// one command per worker, or as MakeSlurmServeCommand for the environment.
StatusOr<SlurmServeCommand> MakeSlurmBatchCommand(
    const SlurmRunSpec& spec, const Environment& env,
    const std::vector<std::vector<std::string>>& commands);

}  // namespace dtf::launch::slurm
