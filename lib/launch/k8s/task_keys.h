// A pod's own keys: what the `dtf-keys` init container of a Kubernetes run
// copies from the run's Secret (mounted into that container alone) into
// the memory volume the task's container mounts, so that a pod holds the
// run's secret, the CA's certificate and its own certificate and key,
// never another task's key (docs/launch.md, *Kubernetes profiles*).
#pragma once

#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/base/task_name.h"

namespace dtf::launch::k8s {

// The task a pod runs, from the index its environment variable holds:
// with `ps` >= 0 as an Indexed Job numbers its pods (parameter servers
// first, then the workers); otherwise `role`:(index + `offset`) (a TFJob
// replica: PS i is ps:i, Worker i is worker:i+1 after the chief). Errors
// name the variable and what it held.
StatusOr<TaskName> TaskFromIndex(const std::string& variable,
                                 const std::string& value, int ps, int workers,
                                 Role role, int offset);

// Copies from the Secret's mount `from` into `to` (created if missing):
// `secret`, `ca.pem` and `s3-credentials` where the Secret holds them, and
// `<task>.pem` and `<task>.key` ("worker-1") of `task`, each mode 0400;
// the other tasks' files are left behind. Returns the names copied.
// NotFound naming the file when the Secret holds a CA but not the task's
// certificate or key, or lacks the run's secret.
StatusOr<std::vector<std::string>> CopyTaskKeys(const std::string& from,
                                                const std::string& to,
                                                const TaskName& task);

}  // namespace dtf::launch::k8s
