// What Slurm says of a run's job or job step now, and cancelling it: the
// queries the Slurm backend and `dtf status` / `stop` make (squeue while
// it is queued or running, then scontrol while Slurm remembers it, then
// sacct).
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "lib/base/status.h"

namespace dtf::launch::slurm {

// The key of tasks.json (RunRecord::backend) that holds a run's Slurm job
// ("1234", submitted with sbatch) or job step ("1234.5", srun inside an
// existing allocation).
inline constexpr std::string_view kSlurmJobKey = "slurm_job";

struct SlurmJobState {
  // Slurm's word ("PENDING", "RUNNING", "COMPLETED", "CANCELLED", ...);
  // "ENDED" once no command knows the job any more.
  std::string state;
  bool over = false;  // SlurmStateFinal, or ENDED
};

// The state of `job` ("1234") or job step ("1234.5"). An error when
// Slurm cannot be asked (squeue missing or failing for another reason
// than an unknown job).
StatusOr<SlurmJobState> QuerySlurmJob(const std::string& job);

// scancel `job` (with `signal` when not empty: "KILL"). An error naming
// the job when scancel fails for another reason than the job being over.
Status CancelSlurmJob(const std::string& job, const std::string& signal = "");

// Polls QuerySlurmJob until the job is over or `timeout` passed; the last
// state seen.
StatusOr<SlurmJobState> WaitSlurmJobOver(const std::string& job,
                                         std::chrono::milliseconds timeout);

}  // namespace dtf::launch::slurm
