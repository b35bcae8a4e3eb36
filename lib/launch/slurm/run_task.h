// `dtf task slurm`: one srun task of a dtf run under Slurm becoming its
// `dtf serve`. Built into dtf_launch (it starts processes and writes the
// run directory's exit records); the rest of lib/launch/slurm is not.
#pragma once

#include <atomic>

#include "lib/base/status.h"
#include "lib/launch/process.h"
#include "lib/launch/slurm/slurm_task.h"

namespace dtf::launch::slurm {

// Runs `command` as RunDirTask does (dir_task_command.h): `*cancel` turns
// true when srun or scancel signals this task; `append` for a task started
// again, whose output goes on in the logs of the one it replaces.
StatusOr<ExitInfo> RunSlurmTask(const SlurmServeCommand& command,
                                const std::atomic<bool>* cancel,
                                bool append = false);

}  // namespace dtf::launch::slurm
