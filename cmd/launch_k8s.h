// dtf launch with a backend = "kubernetes" profile: the run's manifests
// printed (--dry-run), written (--render DIR), or applied with kubectl.
#pragma once

#include <optional>
#include <string>

#include "cmd/app.h"
#include "lib/base/status.h"
#include "lib/launch/plan.h"

namespace dtf::cli {

struct KubernetesLaunch {
  bool dry_run = false;
  std::string render_dir;  // "": apply
};

Status LaunchKubernetes(const launch::PlanRequest& request,
                        const KubernetesLaunch& how, Context* ctx);

// dtf status, logs and stop of an applied Kubernetes run (its run directory
// holds kubernetes.json): kubectl get, logs and delete by the run's label,
// attached to this terminal. nullopt for any other run.
enum class KubernetesFollow { kStatus, kLogs, kLogsFollow, kStop };
std::optional<Status> FollowKubernetesRun(const std::string& run_dir,
                                          KubernetesFollow what);

}  // namespace dtf::cli
