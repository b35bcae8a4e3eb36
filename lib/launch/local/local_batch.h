// A batch job (lib/launch/batch/batch_job.h) on a local profile: one
// process per shard on this machine, reading the job's directory and
// inputs where they are and writing each shard beside the output.
#pragma once

#include <memory>

#include "lib/launch/batch/batch_job.h"
#include "lib/launch/batch/supervised_batch.h"
#include "lib/launch/profile.h"

namespace dtf::launch {

std::unique_ptr<BatchRunner> NewLocalBatchRunner(Profile profile,
                                                 RunStarter start);

}  // namespace dtf::launch
