// `dtf task slurm`: one srun task of a dtf run under Slurm becoming its
// `dtf serve`. Built into dtf_launch (it starts processes and writes the
// run directory's exit records); the rest of lib/launch/slurm is not.
#pragma once

#include <atomic>

#include "lib/base/status.h"
#include "lib/launch/process.h"
#include "lib/launch/slurm/slurm_task.h"

namespace dtf::launch::slurm {

// Runs `command` as a child of this process: creates its directory, writes
// the node's name to <dir>/node (kNodeFile), starts
// it (Spawn: its own process group, dying with this process; output to its
// stdout and stderr files, appended to with `append`), sends it SIGTERM once
// `*cancel` turns true (this task signalled by srun or scancel), waits for it
// and writes <dir>/exit.json: "exited" for status 0, else "stopped" once
// `*cancel` turned true, else "failed". Returns how it ended; an error when it
// could not be started or its directory made.
StatusOr<ExitInfo> RunSlurmTask(const SlurmServeCommand& command,
                                const std::atomic<bool>* cancel,
                                bool append = false);

}  // namespace dtf::launch::slurm
