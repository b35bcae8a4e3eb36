// The SSH backend: the plan's tasks on the hosts of an SSH profile.
//
// Placing a run: the runtime (dtf pack env) and the job (dtf pack zip; for
// a batch plan its PlanRequest::batch_files) are packed here,
// reproducibly, while every host is checked at once
// (lib/launch/ssh/preflight.h); nothing is written anywhere when one fails;
// with base_port = 0 the ports are chosen from what each host has free.
// The supervisor (lib/launch/supervisor.h) then makes the run directory
// here as for a local run (plan.json, secret, tasks.json, one directory per
// task); preparing ships the archives to the hosts that lack them and
// writes the secret and each task's environment there (0600); each task is
// started by `dtf task exec` of the shipped runtime, parameter servers
// first, every host at once, detached from the SSH session
// (ssh_backend_start.cc). The run is watched over SFTP — ready files,
// output, exit.json (copied into the local task directory) — at most every
// 200 ms; a dropped connection to a host is reconnected with backoff for
// ssh.reconnect_timeout seconds (lib/launch/ssh/host_link.h) while the tasks
// there run on; a host that stays unreachable fails the run, naming it.
// Stopping signals the tasks on their hosts, the workers first
// (ssh_backend_watch.cc). At the end the chief's metrics are fetched into
// --metrics-out.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/backend.h"
#include "lib/launch/log_tail.h"
#include "lib/launch/ssh/host_link.h"
#include "lib/launch/ssh/preflight.h"
#include "lib/launch/ssh/remote_host.h"
#include "lib/launch/supervisor.h"

namespace dtf::launch {

class SshBackend final : public Backend {
 public:
  explicit SshBackend(RunOptions options);
  ~SshBackend() override;

  BackendKind kind() const override { return BackendKind::kSsh; }
  // Packs, checks every host; errors name the host.
  StatusOr<Plan> Place(PlanRequest request) override;
  void Attach(const Plan* plan, BackendEvents* events) override;
  // Ships what each host lacks and prepares its run directory.
  Status Prepare(const RunTls* tls) override;
  std::vector<StatusOr<ProcessId>> StartTasks(Role role) override;
  StatusOr<ProcessId> StartReserved(size_t i) override;
  StatusOr<ProcessId> StartAgain(size_t i, bool all) override;
  // Keepalives and reconnects; an error once a host is lost.
  Status Tend() override;
  // A lost connection starts its host's link reconnecting (its tasks are
  // not read meanwhile); any other SSH error is returned.
  Status Look() override;
  std::chrono::milliseconds LookEvery() const override;
  bool Reachable(size_t i) const override;
  bool StopsOnRequest() const override { return true; }
  // SIGTERM to the workers, then to the parameter servers, SIGKILL after
  // grace, on the hosts reached; a task on a host that stays unreachable
  // is recorded lost at the end.
  Status StopTasks(bool final) override;
  std::string StderrTail(size_t i) override;
  std::string ChiefFailed(size_t i, const TaskEnd& end) override;
  std::string NotReady(size_t i) const override;
  void FetchMetrics() override;

  // What shipping sent to each host (plan.hosts order).
  const std::vector<ShipReport>& shipped() const { return shipped_; }

 private:
  struct Task {
    RemoteHost* host = nullptr;
    HostLink* link = nullptr;
    ProcessId process;
    bool started = false;
    bool ready = false;
    std::optional<ExitRecord> exit;
    // stdout and stderr, read over SFTP.
    std::unique_ptr<LineTail> tails[2];
  };

  void Note(std::string_view text) const;
  // Reads one task's ready file; an error that is not a drop.
  Status LookReady(size_t i);
  // Reads one task's exit.json; an error that is not a drop.
  Status LookExit(size_t i);
  // Copies task i's exit record `data` here and tells its end.
  void TakeExit(size_t i, const std::string& data);
  // After `error` from host `link`: true when it is the connection's loss
  // (then noted, and the link reconnects).
  bool Dropped(HostLink& link, const Status& error);
  void NoteDrop(const HostLink& link) const;
  // Task i's process `id` started: recorded, its output followed, noted.
  void Started(size_t i, const ProcessId& id);
  void PumpOutput(size_t i, bool flush);
  // Stops the tasks still running on the hosts reached; the first error
  // watching them.
  Status StopRunning();
  // Records the tasks that were started and whose end is unknown as lost.
  void RecordLost();
  // The local copy of task i's exit.json.
  std::string LocalExitFile(size_t i) const;

  RunOptions options_;
  const Plan* plan_ = nullptr;
  BackendEvents* events_ = nullptr;
  // From Place until Prepare: the archives to ship.
  ShippedArchive env_;
  ShippedArchive job_;
  std::vector<std::unique_ptr<RemoteHost>> hosts_;  // plan.hosts order
  std::vector<std::unique_ptr<HostLink>> links_;    // one per host
  std::vector<ShipReport> shipped_;
  std::vector<Task> tasks_;
};

// A run on the SSH backend.
class SshRun : public Run {
 public:
  // Run::Start on an SshBackend. On an error no task is left running on
  // any host; errors name the host (and task).
  static StatusOr<std::unique_ptr<SshRun>> Start(PlanRequest request,
                                                 RunOptions options);

  // What shipping sent to each host (plan.hosts order).
  const std::vector<ShipReport>& shipped() const { return ssh_->shipped(); }

 private:
  // Takes `backend`.
  SshRun(SshBackend* backend, RunOptions options);

  const SshBackend* ssh_;
};

// What the runtime this dtf would ship needs of a host (architecture,
// glibc, about how many bytes), without packing it: for `dtf doctor`.
StatusOr<PreflightOptions> RuntimeNeeds();

// Follows `path` on `host` (which must outlive it).
std::unique_ptr<LineTail> RemoteTail(RemoteHost* host, std::string path);

// Connects to the host of `task` as the plan says.
StatusOr<std::unique_ptr<RemoteHost>> ConnectTaskHost(const Plan& plan,
                                                      const TaskPlan& task);

// What `dtf status`, `logs` and `stop` need of an SSH run's tasks, on their
// hosts (ssh_run_source.cc).
std::unique_ptr<RunSource> OpenSshRunSource(const Plan& plan);

}  // namespace dtf::launch
