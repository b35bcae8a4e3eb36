// dtf launch with a backend = "kubernetes" profile: the run's manifests
// printed (--dry-run), written (--render DIR), or applied with kubectl.
#pragma once

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

}  // namespace dtf::cli
