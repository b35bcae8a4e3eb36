// A run in progress, on whatever backend (lib/launch/backend.h): the run
// logic every backend shares.
//
// A run: a new run id and directory (.dtf/runs/<id>/: plan.json, secret,
// tasks.json, one directory per task with its exit.json, and its stdout,
// stderr and ready file where the backend keeps them), the tasks started
// parameter servers first. The run ends when the chief (worker 0) exits:
// the others get `grace` to exit on their own and are then stopped. A task
// that ends non-zero before the chief is handled as
// lib/launch/restart_policy.h says: started again with RestartArgv up to
// max_restarts times (in an allreduce run every worker with it), a worker
// other than the chief past them noted and left out (the run goes on), a
// parameter server or an allreduce worker past them ending the run: every
// other task is stopped and the failure names the task and quotes its
// stderr. A task that cannot start or does not become ready in time ends
// the run the same way. Past RunOptions::deadline, on the cancel flag and
// on `dtf stop` every task is stopped (SIGTERM, the workers first, SIGKILL
// after `grace`) and the run ends DeadlineExceeded or Cancelled. tasks.json
// (lib/launch/run_registry.h) follows every step; at the end no task is
// left running. A batch plan (PlanRequest::batch_command) has no chief:
// the run ends when every task has exited 0, or at the first that failed.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/backend.h"
#include "lib/launch/plan.h"
#include "lib/launch/run_options.h"
#include "lib/launch/run_registry.h"

namespace dtf::launch {

// A run in progress, carried out by polling. Not thread-safe: one thread
// calls Poll/Wait/Stop (the cancel flag may be set from anywhere).
class Run : private BackendEvents {
 public:
  // Starts a run of `request` on `backend`: places it, writes the run
  // directory (plan.json, secret, TLS files, task directories, tasks.json)
  // and starts every task (PS first). `request.run_id` is used when it is
  // not kUnchosenRunId, else a new one is made. On an error no task is
  // left running and the run directory, once made, records the failure.
  static StatusOr<std::unique_ptr<Run>> Start(std::unique_ptr<Backend> backend,
                                              PlanRequest request,
                                              RunOptions options);
  // Stops whatever still runs.
  virtual ~Run();

  const Plan& plan() const { return plan_; }
  const std::string& run_id() const { return plan_.run_id; }
  // Whether task `i` (plan order) has written its ready file since it was
  // last started.
  bool ready(size_t i) const { return tasks_[i].ready; }

  // One look at the run: the cancel flag, `dtf stop`, the deadline, ready
  // files, output, exits, timeouts. Returns true once the run is over (then
  // every task is gone).
  bool Poll();
  // Polls until the run is over.
  RunOutcome Wait();
  // Stops every task now and ends the run with `why`.
  void Stop(const Status& why);
  // Meaningful once the run is over.
  RunOutcome outcome() const { return outcome_; }
  // Starts the worker slots reserved at launch (Plan::Reserved) below
  // `workers`, as `dtf scale` asks (lib/launch/run_scale.h): each joins the
  // running run and takes a share of the input left. An error, and
  // nothing started, when the run cannot have that many (CheckScale) or is
  // ending; the error of a slot that failed to start.
  Status Scale(int workers);

 protected:
  Run(std::unique_ptr<Backend> backend, RunOptions options);
  // Start's work, on a Run made by a subclass.
  Status Begin(PlanRequest request);
  Backend& backend() const { return *backend_; }

 private:
  struct Task {
    bool started = false;
    // An allreduce worker the run went on without (kResizeAll).
    bool left_out = false;
    bool ready = false;
    std::optional<TaskEnd> end;
    int restarts = 0;
    std::chrono::steady_clock::time_point restarted_at;  // of the last one
  };

  // BackendEvents.
  void Note(std::string_view text) override;
  bool WantsOutput() const override;
  void Output(size_t task, Stream stream, std::string_view line) override;
  void Ready(size_t task, const std::string& address) override;
  void Ended(size_t task, TaskEnd end) override;
  bool EndsAreStops() const override;

  // Whether `dtf stop` has been asked to stop this run.
  bool StopRequested() const;
  void WriteRecord();
  // Ends the run with `why`, unless it is already ending.
  void Fail(const Status& why);
  // Ends the run, before it started, with `why` (returned).
  Status FailStart(const Status& why);
  // Past `options.deadline` (counted from the start), before the chief has
  // exited: stops every task and returns true.
  bool DeadlinePassed();
  // Acts on task `i`'s end (lib/launch/restart_policy.h); false once the
  // run is over.
  bool OnEnded(size_t i);
  // Starts task i again after a failure; false when that failed.
  bool Restart(size_t i);
  // Stops every other task and starts every task again (an allreduce
  // worker `failed` ended), without it where `without` (kResizeAll: the
  // run goes on at the new size); false when that failed (the run is
  // ending).
  bool RestartAll(size_t failed, bool without = false);
  // The workers of an allreduce run that take part: started, not left
  // out, and not `but`.
  std::vector<int> Members(size_t but) const;
  // Stops every task and starts the workers of `members` again (their
  // command lines saying so: SetMembers), from the last checkpoint; false
  // when that failed (the run is ending).
  bool RestartMembers(const std::vector<int>& members, bool count);
  // Starts task i again with RestartArgv, counting a restart of it where
  // `count`; false when that failed.
  bool Respawn(size_t i, bool all, bool count = true);
  // Scale for an allreduce run: every worker starts again from the last
  // checkpoint with the reserved slots below `workers` among them.
  Status ScaleAllreduce(int workers);
  // Whether the chief has exited and the others are done or out of time;
  // then the run is finished.
  bool ChiefDone();
  // The workers still running but task i (the chief among them; in an
  // allreduce run, those that ended in the same look too).
  int LiveWorkers(size_t i) const;
  // Acts on a new <run dir>/scale.json (`dtf scale`): Scale, noting why
  // when it cannot.
  void TakeScaleRequest();
  // A task past start_timeout without its ready file fails the run.
  bool ReadyTimedOut();
  // Stops whatever still runs, records the outcome and sets over_.
  void Finish();
  RunOutcome MakeOutcome();

  Plan plan_;
  RunOptions options_;
  std::unique_ptr<Backend> backend_;
  std::vector<Task> tasks_;
  RunRecord record_;
  std::chrono::steady_clock::time_point started_;
  std::chrono::steady_clock::time_point last_look_;
  std::optional<std::chrono::steady_clock::time_point> linger_until_;
  // The tasks whose ends the backend told during the current look.
  std::vector<size_t> ended_now_;
  bool stopping_ = false;
  // Set while RestartAll stops the tasks: their ends are recorded as
  // stopped and not acted on.
  bool restarting_ = false;
  bool over_ = false;
  // When <run dir>/scale.json was written, as last taken.
  std::filesystem::file_time_type scale_seen_;
  Status failure_;  // set when the run ends other than by the chief
  RunOutcome outcome_;
};

// Starts a run on the backend its profile names (lib/launch/backends.cc).
StatusOr<std::unique_ptr<Run>> StartRun(PlanRequest request,
                                        RunOptions options);

// Starts the run (StartRun) under a supervisor process of its own (double
// fork, new session, output to <run dir>/supervisor.log) that carries it
// out as Run::Wait does and keeps the records; the supervisor's SIGTERM or
// `dtf stop` ends it. Returns the run id once every task is started, or the
// error that kept the run from starting. `options.on_output`, `on_note`
// and `cancel` are not used.
StatusOr<std::string> StartDetached(PlanRequest request, RunOptions options);

}  // namespace dtf::launch
