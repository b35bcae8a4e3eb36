// The local backend: every task of a plan as a process on this machine.
//
// Free ports are held (lib/launch/ports.h) until each task's ready file
// shows it has bound its own; every task is started in its own session and
// process group with its output in files in its task directory, and dies
// with its launcher (PR_SET_PDEATHSIG). Stopping signals the process
// groups (SIGTERM, the workers first, then SIGKILL after `grace`); `dtf
// stop` signals them itself. The run logic is the supervisor's
// (lib/launch/supervisor.h).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/backend.h"
#include "lib/launch/ports.h"
#include "lib/launch/process.h"
#include "lib/launch/supervisor.h"

namespace dtf::launch {

class LocalBackend final : public Backend {
 public:
  explicit LocalBackend(const RunOptions& options);
  ~LocalBackend() override;

  BackendKind kind() const override { return BackendKind::kLocal; }
  StatusOr<Plan> Place(PlanRequest request) override;
  void Attach(const Plan* plan, BackendEvents* events) override;
  Status Prepare(const RunTls* tls) override;
  std::vector<StatusOr<ProcessId>> StartTasks(Role role) override;
  StatusOr<ProcessId> StartReserved(size_t i) override;
  StatusOr<ProcessId> StartAgain(size_t i, bool all) override;
  Status Tend() override { return OkStatus(); }
  Status Look() override;
  std::chrono::milliseconds LookEvery() const override {
    return std::chrono::milliseconds(0);
  }
  bool Reachable(size_t) const override { return true; }
  bool StopsOnRequest() const override { return false; }
  Status StopTasks(bool final) override;
  std::string StderrTail(size_t i) override;
  std::string ChiefFailed(size_t i, const TaskEnd& end) override;
  std::string NotReady(size_t i) const override;
  void FetchMetrics() override {}  // the chief writes --metrics-out itself

  // The process of task `i` (plan order).
  const ProcessId& process(size_t i) const { return tasks_[i].process; }
  // Whether the launcher still holds task `i`'s port.
  bool port_held(size_t i) const { return tasks_[i].port.held(); }

 private:
  struct Task {
    ProcessId process;
    HeldPort port;
    bool ready = false;
    std::optional<ExitInfo> exit;
  };

  // Task i started anew with `argv` (its ready and exit files removed
  // first); errors say the task `what` ("failed to start again").
  StatusOr<ProcessId> Respawn(size_t i, std::vector<std::string> argv,
                              bool append, std::string_view what);
  StatusOr<ProcessId> Spawn(size_t i, std::vector<std::string> argv,
                            bool append);
  void PumpOutput(bool flush);
  void CheckReady();
  // Reaps the tasks that exited, records and tells their ends.
  void Reap();
  void RecordExit(size_t i);
  // Stops every task's process group (SIGTERM, SIGKILL after grace) and
  // reaps them.
  void StopAll();

  std::chrono::milliseconds grace_;
  size_t failure_lines_;
  const Plan* plan_ = nullptr;
  BackendEvents* events_ = nullptr;
  std::vector<HeldPort> ports_;  // from Place until Attach
  std::vector<Task> tasks_;
  std::vector<std::unique_ptr<class LineTail>> tails_;  // 2 per task
};

// A run on the local backend, with a look at its processes.
class LocalRun : public Run {
 public:
  // Run::Start on a LocalBackend.
  static StatusOr<std::unique_ptr<LocalRun>> Start(PlanRequest request,
                                                   RunOptions options);

  // The process of task `i` (plan order).
  const ProcessId& process(size_t i) const { return local_->process(i); }
  // Whether the launcher still holds task `i`'s port.
  bool port_held(size_t i) const { return local_->port_held(i); }

 private:
  // Takes `backend`.
  LocalRun(LocalBackend* backend, RunOptions options);

  const LocalBackend* local_;
};

// What `dtf status`, `logs` and `stop` need of a local run's tasks.
std::unique_ptr<RunSource> OpenLocalRunSource(const Plan& plan);

}  // namespace dtf::launch
