// dtf launch --resume of a Kubernetes run: its objects re-created from what
// its run directory recorded when it was applied (kubernetes/*.yaml: the
// same Secret, ConfigMap and Job or TFJob, under the same run id), so that
// each pod's `dtf serve --restore` goes on from the run's last checkpoint
// on the output volume (kubernetes.output), as a pod the Job replaced does.
#pragma once

#include <string>
#include <string_view>

#include "lib/base/status.h"
#include "lib/launch/hand_off.h"
#include "lib/launch/k8s/k8s_profile.h"

namespace dtf::launch::k8s {

// How a run's Job (or TFJob) stands, by its conditions.
enum class WorkloadState {
  kGone,       // no such object (dtf stop deleted it)
  kActive,     // neither complete nor failed
  kSucceeded,  // Complete / SuccessCriteriaMet (a TFJob: Succeeded)
  kFailed,     // Failed / FailureTarget
};

// The state of the objects listed in `json` (WorkloadCommand's output, a
// List). DataLoss naming what is wrong when it is not such a list.
StatusOr<WorkloadState> WorkloadStateOf(std::string_view json);

// Resumes the run whose directory `run_dir` holds kubernetes.json: checks
// that the record is of a training run whose output_dir outlives its pods
// (else FailedPrecondition: its checkpoints died with them) and that its
// Job has failed or is gone (a Job that succeeded or is still active is
// refused, naming the run), then deletes what is left of its objects and
// applies the recorded ones again. With how.dry_run, returns the kubectl
// commands it would run and runs none. Returns the text for stdout (the
// run id and a newline); notes go to how.on_info.
StatusOr<std::string> ResumeKubernetesRun(const std::string& run_dir,
                                          const HandOffOptions& how);

}  // namespace dtf::launch::k8s
