// The BatchRunner (lib/launch/batch/batch_job.h) of a profile's backend:
// each backend's own, from its folder (local/, ssh/, slurm/, k8s/). Built
// into dtf_launch beside StartRun's factory (backends.cc), whose StartRun
// it hands to the runners that go through the supervisor.
#pragma once

#include <memory>

#include "lib/launch/batch/batch_job.h"
#include "lib/launch/profile.h"

namespace dtf::launch {

std::unique_ptr<BatchRunner> MakeBatchRunner(Profile profile);

}  // namespace dtf::launch
