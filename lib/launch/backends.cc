// The one place that picks a backend by the plan's BackendKind.
#include "lib/base/strings.h"
#include "lib/launch/backend.h"
#include "lib/launch/local/local_backend.h"
#include "lib/launch/slurm/slurm_backend.h"
#include "lib/launch/ssh/ssh_backend.h"
#include "lib/launch/supervisor.h"

namespace dtf::launch {
namespace {

Status NotBuilt(BackendKind kind) {
  return absl::UnimplementedError(
      ToAbsl(StrCat("the \"", BackendName(kind),
                    "\" backend is not built yet; \"local\" and \"ssh\" are")));
}

}  // namespace

StatusOr<std::unique_ptr<Run>> StartRun(PlanRequest request,
                                        RunOptions options) {
  switch (request.profile.backend) {
    case BackendKind::kLocal: {
      DTF_ASSIGN_OR_RETURN(std::unique_ptr<LocalRun> run,
                           LocalRun::Start(std::move(request), options));
      return std::unique_ptr<Run>(std::move(run));
    }
    case BackendKind::kSsh: {
      DTF_ASSIGN_OR_RETURN(std::unique_ptr<SshRun> run,
                           SshRun::Start(std::move(request), options));
      return std::unique_ptr<Run>(std::move(run));
    }
    case BackendKind::kSlurm:
      return StartSlurmRun(std::move(request), std::move(options));
    case BackendKind::kKubernetes:  // cmd/launch_k8s.cc
      break;
  }
  return NotBuilt(request.profile.backend);
}

StatusOr<std::unique_ptr<RunSource>> OpenRunSource(const Plan& plan) {
  switch (plan.backend) {
    case BackendKind::kLocal:
      return OpenLocalRunSource(plan);
    case BackendKind::kSsh:
      return OpenSshRunSource(plan);
    case BackendKind::kSlurm:
      return OpenSlurmRunSource(plan);
    case BackendKind::kKubernetes:  // cmd/launch_k8s.cc
      break;
  }
  return NotBuilt(plan.backend);
}

}  // namespace dtf::launch
