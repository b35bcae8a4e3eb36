// A batch job (lib/launch/batch/batch_job.h) on a Spark profile: one task
// per shard, each a task of the run's barrier stage, reading the job's
// directory and inputs at their paths (storage the executors and the
// launcher share) and writing
// each shard into its task directory in the run directory, where the
// launcher reads it once the run is over. Without a runs directory given,
// the run goes under the profile's spark.run_dir when it sets one, as
// `dtf launch` does.
#pragma once

#include <memory>

#include "lib/launch/batch/batch_job.h"
#include "lib/launch/batch/supervised_batch.h"
#include "lib/launch/profile.h"

namespace dtf::launch {

std::unique_ptr<BatchRunner> NewSparkBatchRunner(Profile profile,
                                                 RunStarter start);

}  // namespace dtf::launch
