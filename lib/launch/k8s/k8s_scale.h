// dtf scale of a Kubernetes run (docs/launch.md, *Workers added to a
// running run*): a run launched with max_workers above workers renders an
// elastic Indexed Job (completions = parallelism = ps + the workers
// started) whose every slot has its address and certificate; scaling
// patches the Job's completions and parallelism, the Job's controller
// creates the new indexes' pods, and each new worker joins the run at its
// next step boundary as on every backend (its input shard released to it
// by the worker that read it).
#pragma once

#include <string>

#include "lib/base/status.h"

namespace dtf::launch::k8s {

// Scales the run of `run_dir` (its kubernetes.json) to `workers` workers.
// Returns the text for stdout. FailedPrecondition for a TFJob or a run
// without worker slots to start; InvalidArgument for more workers than
// slots or fewer than are started; the kubectl command's output when it
// failed.
StatusOr<std::string> ScaleKubernetesRun(const std::string& run_dir,
                                         int workers);

}  // namespace dtf::launch::k8s
