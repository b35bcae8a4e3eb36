// A run on backend = "kubernetes" (lib/launch/hand_off.h): its manifests
// (lib/launch/k8s/manifests.h) printed for a dry run, written (--render
// DIR), or applied with kubectl under a run directory that records them
// (kubernetes.json and kubernetes/*.yaml); then the cluster's Job carries
// the run out, and dtf status, logs and stop run kubectl get, logs and
// delete by the run's label.
#pragma once

#include <optional>
#include <string>

#include "lib/base/status.h"
#include "lib/launch/hand_off.h"
#include "lib/launch/plan.h"
#include "lib/launch/plan_hooks.h"
#include "lib/launch/profile.h"

namespace dtf::launch::k8s {

// The keys a Kubernetes profile has, and its [kubernetes] table.
class KubernetesProfileTable : public ProfileTable {
 public:
  Status Read(const toml_util::Reader& reader, const toml_util::Table& table,
              Profile* profile) const override;
};

// What MakePlan asks of this backend: it refuses the profile (FailedPre-
// condition naming its `backend` key), since the run is a set of
// manifests, not a plan of processes.
class KubernetesPlanHooks : public PlanHooks {
 public:
  Status CheckProfile(const Profile& profile) const override;
  // True: the cluster's Job controller carries the run out.
  bool HandsOff() const override { return true; }
  // False: the Job controller replaces a pod alone.
  bool ResizesAllreduce() const override { return false; }
};

// HandOffRun for a Kubernetes profile: the run's Secret (its secret and,
// with TLS, a certificate for every task), ConfigMap and Job or TFJob.
StatusOr<std::string> HandOffKubernetesRun(const PlanRequest& request,
                                           const HandOffOptions& how);

// QueryHandedOffRun for a run directory that holds kubernetes.json
// (kRunRecordName); nullopt for any other.
std::optional<Status> QueryKubernetesRun(const std::string& run_dir,
                                         EngineQuery what);

}  // namespace dtf::launch::k8s
