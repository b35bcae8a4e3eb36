// The SSH backend: the plan's tasks on the hosts of an SSH profile.
//
// A run: the runtime (dtf pack env) and the job (dtf pack zip) are packed
// here, reproducibly; every host is checked at once (lib/launch/preflight.h)
// and nothing is written anywhere when one fails; with base_port = 0 the
// ports are chosen from what each host has free. Then the run directory is
// made here as for a local run (plan.json, secret, tasks.json, one
// directory per task), the archives are shipped to the hosts that lack
// them, the secret and each task's environment are written there (0600),
// and each task is started by `dtf task exec` of the shipped runtime,
// parameter servers first, detached from the SSH session. The launcher then
// watches the hosts over SFTP — ready files, output, exit.json (copied into
// the local task directory) — with the local backend's rules
// (lib/launch/restart_policy.h): the chief's exit ends the run, a failed
// parameter server or worker is started again on its host up to
// max_restarts times, a parameter server that fails past that ends the
// run, a task that cannot start stops every task already started. A
// dropped connection to a host is reconnected with backoff for
// ssh.reconnect_timeout seconds (lib/launch/host_link.h) while the tasks
// there run on; a host that stays unreachable fails the run, naming it,
// and the tasks on the other hosts are stopped. At the end the chief's
// metrics are fetched into --metrics-out.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/host_link.h"
#include "lib/launch/local_backend.h"
#include "lib/launch/log_tail.h"
#include "lib/launch/preflight.h"
#include "lib/launch/remote_host.h"

namespace dtf::launch {

class SshRun : public Run {
 public:
  // Packs, checks every host, ships and starts every task. On an error no
  // task is left running on any host; errors name the host (and task).
  static StatusOr<std::unique_ptr<SshRun>> Start(PlanRequest request,
                                                 RunOptions options);
  ~SshRun() override;

  const Plan& plan() const override { return plan_; }
  bool Poll() override;
  RunOutcome Wait() override;
  RunOutcome outcome() const override;

  // Whether task `i` (plan order) has written its ready file.
  bool ready(size_t i) const { return tasks_[i].ready; }
  // What shipping sent to each host (plan.hosts order).
  const std::vector<ShipReport>& shipped() const { return shipped_; }

 private:
  struct Task {
    const TaskPlan* plan = nullptr;
    RemoteHost* host = nullptr;
    HostLink* link = nullptr;
    ProcessId process;
    bool started = false;
    int restarts = 0;
    std::chrono::steady_clock::time_point restarted_at;  // of the last one
    bool ready = false;
    std::optional<ExitRecord> exit;
    // stdout and stderr, read over SFTP.
    std::unique_ptr<LineTail> tails[2];
  };

  SshRun(Plan plan, RunOptions options);
  void Note(std::string_view text) const;
  bool StopRequested() const;
  void WriteRecord();
  // Reads the hosts: ready files, new output, exits. Returns the tasks
  // that exited this time. A lost connection starts its host's link
  // reconnecting (its tasks are not read meanwhile); any other SSH error
  // ends the run.
  std::vector<size_t> Look(bool flush);
  // After `error` from host `link`: true when it is the connection's loss
  // (then noted, and the link reconnects).
  bool Dropped(HostLink& link, const Status& error);
  void NoteDrop(const HostLink& link) const;
  // Keepalives and reconnects; false once a host is lost (the run failed).
  bool TendLinks();
  // Starts task i again after a failure (a PS restoring the last
  // checkpoint); false when that failed (the run failed).
  bool Restart(size_t i);
  // Stops every other task and starts every task again (an allreduce
  // worker `failed` ended); false when that failed (the run failed).
  bool RestartAll(size_t failed);
  // Starts task i again with RestartArgv; false when that failed.
  bool Respawn(size_t i);
  void PumpOutput(Task& t, bool flush);
  // Stops the tasks still running on the hosts reached: SIGTERM to the
  // workers, then to the parameter servers, SIGKILL after grace.
  void StopRunning();
  void Finish() override;
  void FetchMetrics();
  std::string StderrTail(size_t i);

  Plan plan_;
  RunOptions options_;
  std::vector<std::unique_ptr<RemoteHost>> hosts_;  // plan.hosts order
  std::vector<std::unique_ptr<HostLink>> links_;    // one per host
  std::vector<ShipReport> shipped_;
  std::vector<Task> tasks_;
  RunRecord record_;
  std::chrono::steady_clock::time_point started_;
  std::optional<std::chrono::steady_clock::time_point> linger_until_;
  std::chrono::steady_clock::time_point last_look_;
};

// Stops the tasks of a recorded SSH run whose launcher is gone: connects to
// each host and signals every task (SIGTERM, SIGKILL after `grace`), then
// copies each exit.json back. The names of the tasks signalled and killed.
struct RemoteStopReport {
  std::vector<std::string> signalled;
  std::vector<std::string> killed;
};
StatusOr<RemoteStopReport> StopRemoteTasks(const Plan& plan,
                                           std::chrono::milliseconds grace);

// What the runtime this dtf would ship needs of a host (architecture,
// glibc, about how many bytes), without packing it: for `dtf doctor`.
StatusOr<PreflightOptions> RuntimeNeeds();

// For a recorded SSH run whose launcher is gone: copies the exit.json of
// each task that has none here yet from its host into the local task
// directory (and run->exits). Hosts that cannot be reached are skipped.
void FetchRemoteExits(RunView* run);

// Follows `path` on `host` (which must outlive it).
std::unique_ptr<LineTail> RemoteTail(RemoteHost* host, std::string path);

// Connects to the host of `task` as the plan says.
StatusOr<std::unique_ptr<RemoteHost>> ConnectTaskHost(const Plan& plan,
                                                      const TaskPlan& task);

}  // namespace dtf::launch
