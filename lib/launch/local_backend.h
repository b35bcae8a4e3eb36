// The local backend: every task of a plan as a process on this machine.
//
// A run: a new run id and directory (.dtf/runs/<id>/: plan.json, secret,
// tasks.json, one directory per task with its stdout, stderr, ready and
// exit.json); free ports held (lib/launch/ports.h) until each task's ready
// file shows it has bound its own; every task started in its own session
// and process group with its output in files. The run ends when the chief
// (worker 0) exits: the others get `grace` to exit on their own and are
// then stopped. A task that cannot start, does not become ready in time, or
// (a parameter server) exits non-zero before the chief does ends the run:
// every other task is stopped and the failure names the task and quotes its
// stderr. A worker other than the chief that dies is recorded as failed and
// noted, and the run goes on without it (the chief stops waiting for it
// after heartbeat_timeout) — except in an allreduce run (a plan without
// parameter servers), whose other workers would wait for it in their
// collectives for ever: there it ends the run, and no worker is restarted
// alone. Past RunOptions::deadline every task is stopped. No task
// outlives the run: at the end every process group is stopped (SIGTERM,
// then SIGKILL after `grace`), and each task dies with its launcher
// (PR_SET_PDEATHSIG).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/plan.h"
#include "lib/launch/ports.h"
#include "lib/launch/process.h"
#include "lib/launch/run_options.h"
#include "lib/launch/run_registry.h"

namespace dtf::launch {

// A run in progress, carried out by polling, whatever the backend. Not
// thread-safe: one thread calls Poll/Wait/Stop (the cancel flag may be set
// from anywhere).
class Run {
 public:
  virtual ~Run() = default;
  virtual const Plan& plan() const = 0;
  const std::string& run_id() const { return plan().run_id; }
  // One look at the run; true once it is over (then every task is gone).
  virtual bool Poll() = 0;
  // Polls until the run is over.
  virtual RunOutcome Wait() = 0;
  // Stops every task now and ends the run with `why`.
  void Stop(const Status& why);
  // Meaningful once the run is over.
  virtual RunOutcome outcome() const = 0;

 protected:
  // Ends the run with `why`, unless it is already ending.
  void Fail(const Status& why);
  // Past `options.deadline` (counted from `started`), before the chief has
  // exited: stops every task and returns true.
  bool DeadlinePassed(const RunOptions& options,
                      std::chrono::steady_clock::time_point started);
  // Stops whatever still runs, records the outcome and sets over_.
  virtual void Finish() = 0;
  // The outcome of a run that ended other than by its chief: "stopped"
  // (Cancelled) or "failed"; nullopt when failure_ is OK.
  std::optional<RunOutcome> FailureOutcome() const;

  bool stopping_ = false;
  bool over_ = false;
  Status failure_;  // set when the run ends other than by the chief
};

// Starts a run on the backend its profile names: LocalRun::Start or
// SshRun::Start (lib/launch/ssh_backend.h).
StatusOr<std::unique_ptr<Run>> StartRun(PlanRequest request,
                                        RunOptions options);

// One local run in progress.
class LocalRun : public Run {
 public:
  // Creates the run directory, holds the ports, writes plan.json and the
  // secret and starts every task (PS first). `request.run_id` is used when
  // it is not kUnchosenRunId, else a new one is made. On an error no
  // task is left running and the run directory records the failure.
  static StatusOr<std::unique_ptr<LocalRun>> Start(PlanRequest request,
                                                   RunOptions options);
  // Stops whatever still runs.
  ~LocalRun();

  const Plan& plan() const override { return plan_; }
  // The process of task `i` (plan order).
  const ProcessId& process(size_t i) const { return tasks_[i].process; }
  // Whether the launcher still holds task `i`'s port.
  bool port_held(size_t i) const { return tasks_[i].port.held(); }
  // Whether task `i` has written its ready file.
  bool ready(size_t i) const { return tasks_[i].ready; }

  // One look at the run: ready files, output, exits, the cancel flag,
  // timeouts. Returns true once the run is over (then every task is gone).
  bool Poll() override;
  // Polls until the run is over.
  RunOutcome Wait() override;
  // Meaningful once the run is over.
  RunOutcome outcome() const override;

 private:
  struct Task {
    const TaskPlan* plan = nullptr;
    ProcessId process;
    HeldPort port;
    bool ready = false;
    std::optional<ExitInfo> exit;
    std::string address;
    int restarts = 0;
    std::chrono::steady_clock::time_point restarted_at;  // of the last one
  };

  LocalRun(Plan plan, RunOptions options);
  void Note(std::string_view text) const;
  // Whether `dtf stop` has been asked to stop this run.
  bool StopRequested() const;
  void PumpOutput(bool flush);
  void CheckReady();
  // Reaps the tasks that exited; returns the ones that did this time.
  std::vector<size_t> Reap();
  void RecordExit(size_t i);
  // Starts task i again after a failure (a PS restoring the last
  // checkpoint); false when that failed.
  bool Restart(size_t i);
  // Stops every other task and starts every task again (an allreduce
  // worker `failed` ended); false when that failed (the run is ending).
  bool RestartAll(size_t failed);
  // Starts task i again with RestartArgv; false when that failed.
  bool Respawn(size_t i);
  // Stops every task's process group (SIGTERM, SIGKILL after grace) and
  // reaps them.
  void StopAll();
  void Finish() override;
  void WriteRecord();
  std::string StderrTail(size_t i) const;

  Plan plan_;
  RunOptions options_;
  std::vector<Task> tasks_;
  std::vector<std::unique_ptr<class LineTail>> tails_;  // 2 per task
  RunRecord record_;
  std::chrono::steady_clock::time_point started_;
  std::optional<std::chrono::steady_clock::time_point> linger_until_;
  // Set while RestartAll stops the tasks: their ends are recorded as
  // stopped.
  bool restarting_ = false;
};

// Starts the run (StartRun) under a supervisor process of its own (double fork,
// new session, output to <run dir>/supervisor.log) that carries it out as
// LocalRun::Wait does and keeps the records; the supervisor's SIGTERM or
// `dtf stop` ends it. Returns the run id once every task is started, or the
// error that kept the run from starting. `options.on_output`, `on_note`
// and `cancel` are not used.
StatusOr<std::string> StartDetached(PlanRequest request, RunOptions options);

}  // namespace dtf::launch
