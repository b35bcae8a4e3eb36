// The sbatch script of a dtf run under Slurm: #SBATCH lines from the
// profile's [slurm] table, then one srun starting every task (parameter
// servers first, then workers) as `dtf task slurm ...` (slurm_task.h).
#pragma once

#include <string>

#include "lib/base/status.h"
#include "lib/launch/slurm/slurm_profile.h"
#include "lib/launch/slurm/slurm_task.h"

namespace dtf::launch::slurm {

// The names the script gives Slurm's files in the run directory; %j is the
// job id.
inline constexpr char kBatchScriptFile[] = "sbatch.sh";
inline constexpr char kBatchStdout[] = "slurm-%j.out";
inline constexpr char kBatchStderr[] = "slurm-%j.err";

// The script, byte for byte the same for the same arguments: job name
// "dtf-<run id>"; --partition, --account, --time, --nodes,
// --ntasks-per-node, --gpus-per-node and --constraint when the profile sets
// them; --ntasks = ps + workers; output and error files in the run dir;
// then sbatch_args. The body exports spec.env, then runs `srun
// --kill-on-bad-exit=1 (=0 with spec.restarts) --distribution=block --ntasks=N
// --job-name=dtf-<run id>` (the step's name) with the srun_args and
// SlurmTaskArgv(spec), every word shell-quoted. `spec.base_port` and
// `spec.gpus_per_node` are taken as given (normally the profile's).
// InvalidArgument (naming the profile key where one is at fault) when nodes *
// tasks_per_node is below the task count, or a path holds a line break or a
// character sbatch cannot read in an #SBATCH line (whitespace, quotes).
StatusOr<std::string> RenderBatchScript(const SlurmProfile& profile,
                                        const SlurmRunSpec& spec);

}  // namespace dtf::launch::slurm
