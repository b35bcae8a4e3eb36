#include "lib/launch/slurm/run_task.h"

namespace dtf::launch::slurm {

StatusOr<ExitInfo> RunSlurmTask(const SlurmServeCommand& command,
                                const std::atomic<bool>* cancel, bool append) {
  return RunDirTask(command, cancel, append,
                    "slurm.run_dir must be shared by the nodes");
}

}  // namespace dtf::launch::slurm
