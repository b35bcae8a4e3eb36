// The run directory, .dtf/runs/<run id>/ beside the job file (docs/launch.md):
// the names shared by the launcher that writes it and the commands that
// read it (status, logs, stop).
#pragma once

#include <cstddef>
#include <string>

#include "lib/base/task_name.h"
#include "lib/launch/backend_kind.h"

namespace dtf::launch {

// <run dir>/
inline constexpr char kPlanFile[] = "plan.json";    // the plan, as launched
inline constexpr char kTasksFile[] = "tasks.json";  // pids, states, outcome
inline constexpr char kSecretFile[] = "secret";     // 64 hex digits, 0600
// The tasks' S3 settings and credentials, 0600 (docs/storage.md); beside
// the secret wherever it goes (an SSH host's run directory too).
inline constexpr char kS3CredentialsFile[] = "s3-credentials";
inline constexpr size_t kMaxS3CredentialsBytes = 16384;
inline constexpr char kStopFile[] = "stop.json";  // `dtf stop` was here
inline constexpr char kSupervisorLog[] = "supervisor.log";  // --detach only
// A run handed to backend `kind`'s engine (lib/launch/hand_off.h) has no
// plan.json but this record: "<backend>.json" ("kubernetes.json").
inline std::string HandOffRecordName(BackendKind kind) {
  return std::string(BackendName(kind)) + ".json";
}
// <run dir>/tls/ (mode 0700) when the run uses mutual TLS (lib/launch/
// run_tls.h): the run's CA, and a certificate and key per task
// (<role>-<index>.pem, .key) and for the launcher. On an SSH run's hosts,
// <work dir>/runs/<run id>/tls/ holds ca.pem and the host's tasks' files.
inline constexpr char kTlsDir[] = "tls";
inline constexpr char kTlsCaCert[] = "ca.pem";
inline constexpr char kTlsCaKey[] = "ca.key";  // never leaves the launcher
inline constexpr char kTlsLauncherName[] = "launcher";
// On an SSH run's hosts, <work dir>/runs/<run id>/: the chief's metrics
// (fetched into --metrics-out at the end).
inline constexpr char kRemoteMetricsFile[] = "metrics.json";
// <run dir>/<role>-<index>/
inline constexpr char kReadyFile[] = "ready";  // "host:port", by the task
inline constexpr char kStdoutFile[] = "stdout";
inline constexpr char kStderrFile[] = "stderr";
inline constexpr char kExitFile[] = "exit.json";  // once the task exited
// SSH runs, on the task's host: the task's environment (0600, read by
// `dtf task-exec`) and its process ("pid start_ticks").
inline constexpr char kEnvFile[] = "env";
inline constexpr char kPidFile[] = "pid";
// Slurm runs: the node the task runs on, by its `dtf task slurm` (how a
// batch task, whose ready file names no host, is placed in messages).
inline constexpr char kNodeFile[] = "node";
// Slurm runs: a reserved worker slot (Plan::Reserved) waits in its place
// in the job step until the launcher writes this file (`dtf scale`).
inline constexpr char kStartFile[] = "start";

// <job dir>/.dtf/runs
inline std::string DefaultRunsDir(const std::string& job_dir) {
  return (job_dir.empty() ? std::string(".") : job_dir) + "/.dtf/runs";
}
// "ps-0", "worker-1".
inline std::string TaskDirName(Role role, int index) {
  return TaskName{role, index}.DirName();
}

}  // namespace dtf::launch
