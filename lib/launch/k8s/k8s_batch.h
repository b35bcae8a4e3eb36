// A batch job (lib/launch/batch/batch_job.h) on a backend = "kubernetes"
// profile: one pod per shard (an Indexed Job, predict_manifests.h), each
// pod's shard brought back with `kubectl exec ... dtf task shard-fetch`
// (batch_collector.h), then the shards merged in input order
// (lib/launch/batch/shards.h) and the run's objects deleted, whatever the
// outcome. The pods read the inputs from the profile's data volume, as they
// see it; the job's directory too when it is there, else it is shipped in a
// ConfigMap (BatchJob::dir_files). With BatchJob::render_dir, the manifests
// are written there and nothing starts.
#pragma once

#include <memory>

#include "lib/launch/batch/batch_job.h"
#include "lib/launch/profile.h"

namespace dtf::launch::k8s {

std::unique_ptr<BatchRunner> NewKubernetesBatchRunner(Profile profile);

}  // namespace dtf::launch::k8s
