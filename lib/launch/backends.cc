// The one place that picks a backend by its BackendKind: the run, the
// recorded run's source, the plan's and the profile's hooks, and the
// hand-off of a run to a backend's own engine.
#include <filesystem>

#include "lib/base/strings.h"
#include "lib/launch/backend.h"
#include "lib/launch/hand_off.h"
#include "lib/launch/k8s/k8s_resume.h"
#include "lib/launch/k8s/k8s_run.h"
#include "lib/launch/k8s/k8s_scale.h"
#include "lib/launch/local/local_backend.h"
#include "lib/launch/plan_hooks.h"
#include "lib/launch/profile.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/slurm/slurm_backend.h"
#include "lib/launch/slurm/slurm_plan.h"
#include "lib/launch/spark/spark_backend.h"
#include "lib/launch/spark/spark_plan.h"
#include "lib/launch/ssh/ssh_backend.h"
#include "lib/launch/ssh/ssh_plan.h"
#include "lib/launch/supervisor.h"

namespace dtf::launch {
namespace {

Status NotBuilt(BackendKind kind) {
  return absl::UnimplementedError(
      ToAbsl(StrCat("the \"", BackendName(kind),
                    "\" backend is not built yet; \"local\" and \"ssh\" are")));
}

}  // namespace

StatusOr<ProcessId> Backend::StartReserved(size_t) {
  return FailedPreconditionError(
      StrCat("the \"", BackendName(kind()),
             "\" backend reserves no worker slot to start (max_workers)"));
}

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
    case BackendKind::kSpark:
      return StartSparkRun(std::move(request), std::move(options));
    case BackendKind::kKubernetes:  // handed off: HandOffRun
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
    case BackendKind::kSpark:
      return OpenSparkRunSource(plan);
    case BackendKind::kKubernetes:  // handed off: QueryHandedOffRun
      break;
  }
  return NotBuilt(plan.backend);
}

const PlanHooks& PlanHooksOf(BackendKind kind) {
  static const PlanHooks kLocal;
  static const ssh::SshPlanHooks kSsh;
  static const slurm::SlurmPlanHooks kSlurm;
  static const k8s::KubernetesPlanHooks kKubernetes;
  static const spark::SparkPlanHooks kSpark;
  switch (kind) {
    case BackendKind::kLocal:
      return kLocal;
    case BackendKind::kSsh:
      return kSsh;
    case BackendKind::kSlurm:
      return kSlurm;
    case BackendKind::kKubernetes:
      return kKubernetes;
    case BackendKind::kSpark:
      return kSpark;
  }
  return kLocal;
}

const ProfileTable& ProfileTableOf(BackendKind kind) {
  static const ProfileTable kLocal;
  static const ssh::SshProfileTable kSsh;
  static const slurm::SlurmProfileTable kSlurm;
  static const k8s::KubernetesProfileTable kKubernetes;
  static const spark::SparkProfileTable kSpark;
  switch (kind) {
    case BackendKind::kLocal:
      return kLocal;
    case BackendKind::kSsh:
      return kSsh;
    case BackendKind::kSlurm:
      return kSlurm;
    case BackendKind::kKubernetes:
      return kKubernetes;
    case BackendKind::kSpark:
      return kSpark;
  }
  return kLocal;
}

StatusOr<Plan> MakePlan(const PlanRequest& request) {
  return MakePlanWith(request, PlanHooksOf(request.profile.backend));
}

StatusOr<std::string> HandOffRun(const PlanRequest& request,
                                 const HandOffOptions& how) {
  switch (request.profile.backend) {
    case BackendKind::kKubernetes:
      return k8s::HandOffKubernetesRun(request, how);
    case BackendKind::kLocal:
    case BackendKind::kSsh:
    case BackendKind::kSlurm:
    case BackendKind::kSpark:
      break;
  }
  return absl::UnimplementedError(
      ToAbsl(StrCat("the \"", BackendName(request.profile.backend),
                    "\" backend does not hand runs off; dtf launch starts "
                    "and supervises them")));
}

std::optional<Status> QueryHandedOffRun(const std::string& run_dir,
                                        EngineQuery what) {
  // Kubernetes is the one backend that hands runs off.
  return k8s::QueryKubernetesRun(run_dir, what);
}

bool IsHandedOffRun(const std::string& run_dir) {
  std::error_code ec;
  return std::filesystem::exists(
      StrCat(run_dir, "/", HandOffRecordName(BackendKind::kKubernetes)), ec);
}

std::optional<StatusOr<std::string>> ScaleHandedOffRun(
    const std::string& run_dir, int workers) {
  if (!IsHandedOffRun(run_dir)) return std::nullopt;
  return k8s::ScaleKubernetesRun(run_dir, workers);
}

std::optional<StatusOr<std::string>> ResumeHandedOffRun(
    const std::string& run_dir, const HandOffOptions& how) {
  if (!IsHandedOffRun(run_dir)) return std::nullopt;
  return k8s::ResumeKubernetesRun(run_dir, how);
}

}  // namespace dtf::launch
