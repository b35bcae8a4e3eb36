// What dtf launch, status, logs and stop run for a Kubernetes run: kubectl
// command lines selecting the run's objects by the dtf.dev/run-id label,
// and the check that kubectl has a cluster to talk to.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/k8s/k8s_profile.h"

namespace dtf::launch::k8s {

// The object kinds a run of `flavour` creates, for get and delete.
std::string RunKinds(Flavour flavour);

// kubectl [--context C] --namespace NS ...
std::vector<std::string> ApplyCommand(const KubernetesProfile& p,
                                      const std::string& dir);
std::vector<std::string> StatusCommand(const KubernetesProfile& p,
                                       const std::string& run_id);
std::vector<std::string> LogsCommand(const KubernetesProfile& p,
                                     const std::string& run_id, bool follow);
std::vector<std::string> DeleteCommand(const KubernetesProfile& p,
                                       const std::string& run_id);
// patch job <the run's Job> --type=merge: its completions and
// parallelism set to `indexes` (an elastic Indexed Job: dtf scale).
std::vector<std::string> ScaleJobCommand(const KubernetesProfile& p,
                                         const std::string& run_id,
                                         int indexes);
// get <the run's Job or TFJob kind> --selector=<run> --output=json: the
// object whose conditions say how the run stands (WorkloadStateOf).
std::vector<std::string> WorkloadCommand(const KubernetesProfile& p,
                                         const std::string& run_id);

// A scoring run's pods and what it runs in them (dtf predict --profile):
// get pods --selector=<run> --output=json; logs POD --container=C
// --tail=N; exec POD --container=C -- ARGV.
std::vector<std::string> PodsCommand(const KubernetesProfile& p,
                                     const std::string& run_id);
std::vector<std::string> PodLogsCommand(const KubernetesProfile& p,
                                        const std::string& pod,
                                        const std::string& container, int tail);
std::vector<std::string> ExecCommand(const KubernetesProfile& p,
                                     const std::string& pod,
                                     const std::string& container,
                                     const std::vector<std::string>& argv);

// One pod of an Indexed Job, from PodsCommand's output.
struct PodState {
  std::string name;
  int index = -1;       // batch.kubernetes.io/job-completion-index
  std::string phase;    // Pending, Running, Succeeded, Failed, Unknown
  std::string reason;   // why it waits or failed, when the cluster says
  std::string message;  // the cluster's words on it (Unschedulable: why)
};
// The pods listed in `json` (a List of Pods), in its order. DataLoss naming
// what is wrong when it is not such a list or a pod has no index.
StatusOr<std::vector<PodState>> ParsePods(std::string_view json);

// The command line as one shell-quoted string, for messages and --dry-run.
std::string ShellJoin(const std::vector<std::string>& argv);

struct CommandResult {
  int exit_code = -1;  // -1: not run (not found), or killed
  std::string output;  // stdout, and stderr unless apart
  std::string errors;  // stderr, when asked apart
};
// Runs `argv` (argv[0] looked up on PATH) with stdin from /dev/null and
// its output captured, byte for byte; with `stderr_apart`, stderr in
// `errors` (a command whose stdout is data: kubectl exec). Errors: none; a
// program that cannot start gives exit_code -1 and the reason as output.
CommandResult RunCommand(const std::vector<std::string>& argv,
                         bool stderr_apart = false);

// Runs `argv` with this process's stdin, stdout and stderr (kubectl logs
// --follow streams); its exit status, or -1 when it cannot start (the
// reason on stderr).
int RunAttached(const std::vector<std::string>& argv);

// <run dir>/kubernetes.json: what dtf status, logs, stop, scale and launch
// --resume need of an applied run: {"run_id", "namespace", "context",
// "flavour", "training", "output_kept", "ps", "worker_slots",
// "workers_started"}.
inline constexpr char kRunRecordName[] = "kubernetes.json";
// What a record says of the run beyond where its objects are; unset in a
// record written before it said so.
struct RunRecordFacts {
  // A training run (dtf launch), not a scoring run (dtf predict).
  std::optional<bool> training;
  // The pods write train.output_dir on kubernetes.output, so the run's
  // checkpoints outlive them.
  std::optional<bool> output_kept;
  // A run launched with worker slots to start (max_workers): its parameter
  // servers, worker slots and the workers its Job runs now (dtf scale
  // raises it).
  std::optional<int> ps;
  std::optional<int> worker_slots;
  std::optional<int> workers_started;
};
std::string RunRecordJson(const std::string& run_id, const KubernetesProfile& p,
                          const RunRecordFacts& facts);
// The profile's namespace, context and flavour back from RunRecordJson's
// text, and the run id; `facts` (when not null) gets the rest. DataLoss
// "<name>: ..." when it is not that.
StatusOr<KubernetesProfile> ParseRunRecord(std::string_view json,
                                           std::string_view name,
                                           std::string* run_id,
                                           RunRecordFacts* facts = nullptr);

// ParseRunRecord of <run_dir>/kubernetes.json; errors name the file.
StatusOr<KubernetesProfile> ReadRunRecord(const std::string& run_dir,
                                          std::string* run_id,
                                          RunRecordFacts* facts);

// FailedPrecondition naming the problem when kubectl is missing, has no
// current context (or not p.context), or cannot reach the context's
// cluster within a few seconds; what to do instead (--render DIR) is part
// of the message.
Status CheckCluster(const KubernetesProfile& p);

}  // namespace dtf::launch::k8s
