// What dtf launch --resume and dtf status read of a launched run's
// checkpoints: the generations it wrote to the job's output directory
// (lib/runtime/checkpoint/checkpoint_files.h), and whether it can be resumed.
#pragma once

#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/data/job_file.h"
#include "lib/launch/plan.h"
#include "lib/launch/run_status.h"

namespace dtf::cli {

// The job as the run's tasks read it: plan.job with the plan's --set
// values applied.
StatusOr<JobFile> LoadRunJob(const launch::Plan& plan);

// The generations in `job`'s output directory that run `run_id` wrote,
// newest first; a file that cannot be read is listed with its problem (it
// may be this run's).
std::vector<launch::CheckpointRow> RunCheckpoints(const JobFile& job,
                                                  const std::string& run_id);

// Why run `status` cannot be resumed, or OK: it is still going, it
// succeeded, or (a local run) it left no checkpoint of its own, or that
// checkpoint is corrupt or of another job fingerprint. Each names the run and,
// where there is one, the file.
Status CheckResumable(const launch::RunStatus& status, const launch::Plan& plan,
                      const JobFile& job);

}  // namespace dtf::cli
