// A batch job (lib/launch/batch/batch_job.h) on a Slurm profile: one task
// per shard in the run's allocation, reading the job's directory and inputs
// at their paths (storage the nodes and the launcher share) and writing
// each shard into its task directory in the run directory, where the
// launcher reads it once the run is over. Without a runs directory given,
// the run goes under the profile's slurm.run_dir when it sets one, as
// `dtf launch` does.
#pragma once

#include <memory>

#include "lib/launch/batch/batch_job.h"
#include "lib/launch/batch/supervised_batch.h"
#include "lib/launch/profile.h"

namespace dtf::launch {

std::unique_ptr<BatchRunner> NewSlurmBatchRunner(Profile profile,
                                                 RunStarter start);

}  // namespace dtf::launch
