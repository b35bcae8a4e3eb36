// What differs between the backends a run can be carried out on: where
// and how its tasks run, and how the launcher learns what they do. The run
// logic shared by every backend (restarts, the chief's exit, deadlines,
// `dtf stop`, the records) is the supervisor's (lib/launch/supervisor.h):
// it drives one Backend and hears from it through BackendEvents.
//
// The backends, each in a folder (and a library) of its own that holds
// all of it: local (lib/launch/local/: processes on this machine), ssh
// (lib/launch/ssh/: hosts over SSH and SFTP), slurm (lib/launch/slurm/: a
// batch job or a job step) and kubernetes (lib/launch/k8s/: manifests
// handed to the cluster, lib/launch/hand_off.h). Besides its Backend and
// RunSource, each backend has its hooks (lib/launch/plan_hooks.h: what
// planning, plan.json, the dry run, status, logs and stop ask of it), its
// profile table (ProfileTable in lib/launch/profile.h) and its own parts of
// the shared records (Profile::table, Plan::part, RunRecord::backend).
// StartRun, OpenRunSource, PlanHooksOf, ProfileTableOf, HandOffRun and
// QueryHandedOffRun (lib/launch/backends.cc) pick by the BackendKind; the
// shared code asks the hooks (Plan::hooks()), never the kind.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/base/task_name.h"
#include "lib/launch/backend_kind.h"
#include "lib/launch/plan.h"
#include "lib/launch/plan_hooks.h"
#include "lib/launch/process.h"
#include "lib/launch/profile.h"
#include "lib/launch/run_options.h"
#include "lib/launch/run_registry.h"
#include "lib/launch/run_state.h"

namespace dtf::launch {

class LineTail;
struct RunTls;

// How a task ended, as its backend learned it.
struct TaskEnd {
  // As recorded in its exit.json: kExited (status 0), kFailed, kStopped
  // or kLost (gone without a word).
  TaskState state = TaskState::kLost;
  // As a shell reports it; unset when the task was lost.
  std::optional<int> exit_code;
  // The signal that ended it; 0 when none did.
  int signal = 0;
  // How notes and errors word the end after "task <name> " (the backend's
  // wording: "exited with status 1"; "on h1 failed (exit 1)").
  std::string how;
  // The same for a worker the run goes on without ("on h1 failed").
  std::string how_brief;
  // The same in a restart note ("exited with status 1 on h1").
  std::string restart_how;
  // Whether a worker the run goes on without is noted with its stderr
  // also when a signal ended it (else only when it exited).
  bool quote_signalled = false;

  bool clean() const { return state == TaskState::kExited; }
};

// What a backend tells the supervisor as it learns it. Every call comes
// from the thread that calls into the Backend.
class BackendEvents {
 public:
  // One of the launcher's notes (RunOptions::on_note).
  virtual void Note(std::string_view text) = 0;
  // Whether output lines are wanted at all (RunOptions::on_output is set).
  virtual bool WantsOutput() const = 0;
  // A line task `task` (plan order) wrote.
  virtual void Output(size_t task, Stream stream, std::string_view line) = 0;
  // Task `task` wrote its ready file: it serves at `address`.
  virtual void Ready(size_t task, const std::string& address) = 0;
  // Task `task` ended; its exit.json is in its local task directory.
  virtual void Ended(size_t task, TaskEnd end) = 0;
  // Whether a task ending now is the launcher's doing (the run is
  // stopping, every task is being restarted, or `dtf stop` asked): for
  // backends that decide the recorded state themselves, kStopped rather
  // than kFailed.
  virtual bool EndsAreStops() const = 0;

 protected:
  ~BackendEvents() = default;
};

// Where and how a run's tasks run. A Backend serves one run: Place, then
// Attach, Prepare and StartTasks once each, then looks, restarts and stops
// until StopTasks(final = true). Not thread-safe.
class Backend {
 public:
  virtual ~Backend() = default;

  virtual BackendKind kind() const = 0;

  // Checks what can be checked before anything is written (ports, hosts,
  // what is shipped), chooses what is left open (ports, the run id unless
  // `request.run_id` names one) and creates the run directory (or reopens
  // it for request.resume). The plan the run is carried out on. On an
  // error nothing was started.
  virtual StatusOr<Plan> Place(PlanRequest request) = 0;
  // `plan` (Place's, kept by the supervisor for the backend's life) and
  // where events go.
  virtual void Attach(const Plan* plan, BackendEvents* events) = 0;
  // Once plan.json, the secret and the local task directories are written:
  // whatever the tasks need where they run (archives shipped, remote run
  // directories with the secret and `tls`'s files; `tls` is null when the
  // plan has no TLS).
  virtual Status Prepare(const RunTls* tls) = 0;
  // Starts every task of `role` but the reserved worker slots
  // (Plan::Reserved), noting each start: one result per task of the plan
  // (plan order), CancelledError for the tasks not tried (other roles,
  // reserved slots, or after one that failed). Errors name the task.
  virtual std::vector<StatusOr<ProcessId>> StartTasks(Role role) = 0;
  // Starts worker slot `i`, reserved at launch (Plan::Reserved), for `dtf
  // scale`: as StartTasks starts a task, noting the start. Errors name the
  // task; FailedPrecondition from a backend whose plans reserve no slot.
  virtual StatusOr<ProcessId> StartReserved(size_t i);
  // Starts task `i` again after it ended, with RestartArgv and its output
  // appended to its logs. `all`: one of every task started again (an
  // allreduce restart). Errors name the task.
  virtual StatusOr<ProcessId> StartAgain(size_t i, bool all) = 0;

  // Keeps the ways to the tasks open (keepalives, reconnects); an error
  // once one is lost for good (the run fails).
  virtual Status Tend() = 0;
  // One look at the tasks: ready files, new output lines and exits, told
  // to the events as they are found. An error when the tasks cannot be
  // watched (the run fails).
  virtual Status Look() = 0;
  // Looks are this far apart at least (each is costly), however often the
  // run is polled; 0: as often as it is polled.
  virtual std::chrono::milliseconds LookEvery() const = 0;
  // Whether task `i` can be looked at now (its host is reached).
  virtual bool Reachable(size_t i) const = 0;
  // Whether `dtf stop` leaves stopping the tasks to the run: the run acts
  // on the stop request at its next look. Otherwise `dtf stop` signals
  // the tasks itself and the run records their ends as stopped.
  virtual bool StopsOnRequest() const = 0;

  // Stops every task still running: SIGTERM, the workers before the
  // parameter servers, SIGKILL after RunOptions::grace; the ends are told
  // to the events. `final`: the run is ending, so whatever is held for the
  // tasks is let go, a task that cannot be reached is recorded lost and
  // the output is flushed. An error when the tasks could not be watched,
  // or (not final) when a task did not stop.
  virtual Status StopTasks(bool final) = 0;

  // The end of task `i`'s stderr for a failure or a note: "; the last
  // lines of <file>:\n  ..." or " (its stderr, <file>, is empty)".
  virtual std::string StderrTail(size_t i) = 0;
  // Why the run failed when the chief (task `i`) exited non-zero `end`.
  virtual std::string ChiefFailed(size_t i, const TaskEnd& end) = 0;
  // Why the run failed when task `i` never wrote its ready file: "task
  // worker:1 did not write its ready file (<file>)".
  virtual std::string NotReady(size_t i) const = 0;
  // Once the run is over: the chief's metrics into --metrics-out when the
  // chief wrote them elsewhere.
  virtual void FetchMetrics() = 0;
  // What the backend records of what runs the tasks once StartTasks made
  // it (a batch system's job), by key, into tasks.json (RunRecord::
  // backend); empty for none.
  virtual std::map<std::string, std::string> RecordFields() const { return {}; }
};

// The tasks a stop signalled, and those it had to kill.
struct TaskStopReport {
  std::vector<std::string> signalled;
  std::vector<std::string> killed;
};

// A route to a run's chief from this machine when its address is not
// reachable from here.
struct ChiefRoute {
  std::string address;  // host:port on this machine
  std::string via;      // "ssh tunnel to h1"
};

// What `dtf status`, `logs` and `stop` need of a recorded run's tasks
// where they run, its launcher there or gone. Connections it opens last as
// long as it does.
class RunSource {
 public:
  virtual ~RunSource() = default;
  // Copies the exit.json of each task that has none here yet (run->exits)
  // from where it ran into its local task directory (and run->exits).
  // Tasks that cannot be reached are skipped.
  virtual void FetchExits(RunView* run) = 0;
  // Signals every task of `run` where it runs (SIGTERM, SIGKILL after
  // `grace`; on this machine by the process groups tasks.json records,
  // leaving those without a start time alone) and copies each exit.json
  // back. For `dtf stop` of a run whose launcher is gone or, on this
  // machine, leaves the stopping to `dtf stop`.
  virtual StatusOr<TaskStopReport> StopTasks(
      const RunView& run, std::chrono::milliseconds grace) = 0;
  // Follows `path`, one of `task`'s files (its stdout or stderr).
  virtual StatusOr<std::unique_ptr<LineTail>> Follow(
      const TaskPlan& task, const std::string& path) = 0;
  // A route to the chief (kept open while the source lives); an error
  // when there is none.
  virtual StatusOr<ChiefRoute> RouteToChief() = 0;
};

// The source for the recorded run `plan` (which must outlive it), by its
// backend; Unimplemented for a backend this dtf does not have.
StatusOr<std::unique_ptr<RunSource>> OpenRunSource(const Plan& plan);

// The profile table of backend `kind` (ParseProfile reads with it).
const ProfileTable& ProfileTableOf(BackendKind kind);

}  // namespace dtf::launch
