#include "lib/launch/batch_runners.h"

#include <memory>
#include <utility>

#include "lib/launch/k8s/k8s_batch.h"
#include "lib/launch/local/local_batch.h"
#include "lib/launch/slurm/slurm_batch.h"
#include "lib/launch/spark/spark_batch.h"
#include "lib/launch/ssh/ssh_batch.h"
#include "lib/launch/supervisor.h"

namespace dtf::launch {

std::unique_ptr<BatchRunner> MakeBatchRunner(Profile profile) {
  switch (profile.backend) {
    case BackendKind::kLocal:
      break;
    case BackendKind::kSsh:
      return NewSshBatchRunner(std::move(profile), StartRun);
    case BackendKind::kSlurm:
      return NewSlurmBatchRunner(std::move(profile), StartRun);
    case BackendKind::kKubernetes:
      return k8s::NewKubernetesBatchRunner(std::move(profile));
    case BackendKind::kSpark:
      return NewSparkBatchRunner(std::move(profile), StartRun);
  }
  return NewLocalBatchRunner(std::move(profile), StartRun);
}

}  // namespace dtf::launch
