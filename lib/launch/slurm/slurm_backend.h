// The Slurm backend: every task of a plan as one task of a Slurm job step.
//
// Prepare writes the plan's batch script to <run dir>/sbatch.sh (the run
// directory, on storage every node shares, already holds the secret, mode
// 0600). StartTasks submits it with `sbatch --parsable`, or, when the
// launcher itself runs inside an allocation (SLURM_JOB_ID is set), runs it
// with bash there: its srun starts the step on that allocation, no second
// job. Every task (`dtf task slurm`) writes its ready file, its output and
// its exit.json into its task directory; a look reads them there and asks
// Slurm for the job's state (squeue, then scontrol, then sacct; for a step
// its srun). Tasks still without an exit.json once the job is over are
// recorded lost (naming Slurm's state and the end of Slurm's own stderr).
// Stopping is scancel of the job or step (every task gets SIGTERM at once,
// SIGKILL after Slurm's KillWait); `dtf stop` is acted on by the run, or
// by the run source (scancel) once the launcher is gone. Without restarts
// (max_restarts = 0) and without elastic workers (min_workers = 0) srun
// --kill-on-bad-exit ends the step when a task
// fails, so a worker other than the chief that fails fails the run (Look's
// error names it), where the other backends go on without it. With them,
// the step's srun leaves the others running, and StartAgain starts the
// failed task in a job step of its own in the same allocation (`srun
// --jobid=J --overlap -N1 -n1 --nodelist=<its node> dtf task slurm ...
// --restore --replace K`, srun's own output in <task dir>/srun.out and
// srun.err): it takes the failed task's place (its node, port, task id) and
// appends to its logs. A batch plan's
// tasks (`dtf task slurm --batch`) each run their command from plan.json;
// the job ends on its own (COMPLETED) once all have exited 0, and a task
// that failed is told before those srun stopped for it.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/backend.h"
#include "lib/launch/dir_tasks.h"
#include "lib/launch/process.h"
#include "lib/launch/supervisor.h"

namespace dtf::launch {

class SlurmBackend final : public Backend {
 public:
  // `allocation`: the SLURM_JOB_ID the launcher runs in ("" for none).
  SlurmBackend(const RunOptions& options, std::string allocation);
  ~SlurmBackend() override;

  BackendKind kind() const override { return BackendKind::kSlurm; }
  StatusOr<Plan> Place(PlanRequest request) override;
  void Attach(const Plan* plan, BackendEvents* events) override;
  Status Prepare(const RunTls* tls) override;
  std::vector<StatusOr<ProcessId>> StartTasks(Role role) override;
  StatusOr<ProcessId> StartReserved(size_t i) override;
  StatusOr<ProcessId> StartAgain(size_t i, bool all) override;
  Status Tend() override { return OkStatus(); }
  Status Look() override;
  std::chrono::milliseconds LookEvery() const override {
    return std::chrono::milliseconds(200);
  }
  bool Reachable(size_t) const override { return true; }
  bool StopsOnRequest() const override { return true; }
  Status StopTasks(bool final) override;
  std::string StderrTail(size_t i) override;
  std::string ChiefFailed(size_t i, const TaskEnd& end) override;
  std::string NotReady(size_t i) const override;
  void FetchMetrics() override {}  // the chief writes it on shared storage
  std::map<std::string, std::string> RecordFields() const override;

 private:
  Status Submit();
  Status StartStep();
  // Whether the step's srun ends it when a task fails (no restarts).
  bool KillsOnBadExit() const;
  // Reaps the sruns of tasks started again that have exited; with `kill`,
  // kills those still running first.
  void ReapRestartSteps(bool kill);
  void CheckExits();
  // Asks Slurm (or reaps the step's srun) at most every second; sets
  // over_ once the job or step has ended.
  Status CheckJob(bool now);
  // Tasks without an exit.json once the job has been over for a while:
  // recorded stopped (the launcher's doing) or lost.
  void RecordMissing(bool force);
  // Slurm's own stderr (the batch job's, or the step's srun).
  std::string SlurmStderr() const;
  std::string SlurmStderrTail() const;

  std::chrono::milliseconds grace_;
  size_t failure_lines_;
  std::string allocation_;
  const Plan* plan_ = nullptr;
  BackendEvents* events_ = nullptr;
  DirTasks tasks_;
  bool submitted_ = false;
  std::string job_;  // "1234" or "1234.5"
  ProcessId srun_;   // inside an allocation: the step's srun
  std::optional<ExitInfo> srun_exit_;
  // The sruns of the tasks started again (StartAgain), each a step.
  std::vector<ProcessId> restart_sruns_;
  // The reserved worker slots StartReserved started (Plan::Reserved).
  std::vector<bool> scaled_;
  // Whether task i is a reserved slot still waiting in its place.
  bool Waiting(size_t i) const;
  // Every task has ended but the reserved slots still waiting, which end
  // by themselves once the chief's exit record is there.
  bool OnlyWaitingSlotsLeft() const;
  std::string job_state_;  // Slurm's last word on it
  bool over_ = false;
  std::chrono::steady_clock::time_point over_at_;
  std::chrono::steady_clock::time_point last_query_;
  int query_errors_ = 0;
  // The first task that ended non-zero: what ended the step.
  std::optional<size_t> first_failed_;
  // Set once a worker other than the chief failed: Look fails the run.
  Status step_failure_;
};

// A run on the Slurm backend (in the allocation of SLURM_JOB_ID when set).
StatusOr<std::unique_ptr<Run>> StartSlurmRun(PlanRequest request,
                                             RunOptions options);

// What `dtf status`, `logs` and `stop` need of a Slurm run's tasks: their
// files on shared storage, the job's state from Slurm, scancel.
std::unique_ptr<RunSource> OpenSlurmRunSource(const Plan& plan);

}  // namespace dtf::launch
