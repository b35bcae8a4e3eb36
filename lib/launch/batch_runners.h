// The BatchRunner (lib/launch/batch/batch_job.h) of a profile's backend:
// each backend's own, from its folder (local/, ssh/, slurm/, k8s/).
#pragma once

#include <memory>

#include "lib/launch/batch/batch_job.h"
#include "lib/launch/profile.h"

namespace dtf::launch {

std::unique_ptr<BatchRunner> MakeBatchRunner(Profile profile);

}  // namespace dtf::launch
