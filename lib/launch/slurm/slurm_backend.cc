#include "lib/launch/slurm/slurm_backend.h"

#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/launch/log_tail.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/slurm/batch_script.h"
#include "lib/launch/slurm/slurm_cli.h"
#include "lib/launch/slurm/slurm_job.h"
#include "lib/launch/slurm/slurm_plan.h"
#include "lib/launch/slurm/slurm_query.h"
#include "lib/launch/task_files.h"

namespace dtf::launch {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Files a task writes on shared storage may show up on this node a moment
// after Slurm says the job is over.
constexpr std::chrono::seconds kExitFileLag(5);
// Slurm may be asked this long in vain before the run fails.
constexpr int kMaxQueryErrors = 60;

constexpr char kStepStdout[] = "srun.out";
constexpr char kStepStderr[] = "srun.err";

}  // namespace

SlurmBackend::SlurmBackend(const RunOptions& options, std::string allocation)
    : grace_(options.grace),
      failure_lines_(options.failure_lines),
      allocation_(std::move(allocation)) {}

SlurmBackend::~SlurmBackend() = default;

StatusOr<Plan> SlurmBackend::Place(PlanRequest request) {
  return PlanInClaimedRunDir(std::move(request), slurm::SlurmPlanHooks(),
                             nullptr);
}

void SlurmBackend::Attach(const Plan* plan, BackendEvents* events) {
  plan_ = plan;
  events_ = events;
  tasks_.Attach(plan, events);
}

Status SlurmBackend::Prepare(const RunTls*) {
  tasks_.ClearEarlierEnds();
  const std::string script =
      (fs::path(plan_->run_dir) / slurm::kBatchScriptFile).string();
  DTF_RETURN_IF_ERROR(
      WriteFileAtomically(script, slurm::SlurmPartOf(*plan_).batch_script));
  if (::chmod(script.c_str(), 0700) != 0) {
    return ErrnoToStatus(errno, script);
  }
  return OkStatus();
}

Status SlurmBackend::Submit() {
  const std::string script =
      (fs::path(plan_->run_dir) / slurm::kBatchScriptFile).string();
  DTF_ASSIGN_OR_RETURN(
      const slurm::CommandResult r,
      slurm::RunSlurmCommand({"sbatch", "--parsable", script}));
  if (!r.ok()) {
    return FailedPreconditionError(StrCat("run ", plan_->run_id,
                                          ": submitting ", script, ": ",
                                          r.Describe("sbatch")));
  }
  DTF_ASSIGN_OR_RETURN(job_, slurm::ParseSbatchJobId(r.out));
  events_->Note(StrCat("submitted Slurm job ", job_, " (", script, ")"));
  return OkStatus();
}

Status SlurmBackend::StartStep() {
  const std::string script =
      (fs::path(plan_->run_dir) / slurm::kBatchScriptFile).string();
  const std::string name = StrCat("dtf-", plan_->run_id);
  SpawnOptions spawn;
  spawn.argv = {"/bin/bash", script};
  // The script's srun names the step `name`: how it is found below.
  spawn.stdout_file = (fs::path(plan_->run_dir) / kStepStdout).string();
  spawn.stderr_file = (fs::path(plan_->run_dir) / kStepStderr).string();
  DTF_ASSIGN_OR_RETURN(srun_, Spawn(spawn));
  // The step's id, for `dtf stop` once this launcher is gone.
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (Clock::now() < deadline) {
    StatusOr<slurm::CommandResult> r = slurm::RunSlurmCommand(
        {"squeue", "-h", "-s", "-j", allocation_, "-o", "%i %j"});
    if (r.ok() && r->ok()) {
      if (std::optional<std::string> step = slurm::ParseStepId(r->out, name)) {
        job_ = *step;
        break;
      }
    }
    if ((srun_exit_ = TryReap(srun_.pid))) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  events_->Note(StrCat(
      "started job step ",
      job_.empty() ? std::string("(not seen in squeue)") : job_,
      " inside Slurm allocation ", allocation_, " (srun pid ", srun_.pid, ")"));
  return OkStatus();
}

std::vector<StatusOr<ProcessId>> SlurmBackend::StartTasks(Role role) {
  std::vector<StatusOr<ProcessId>> ids(plan_->tasks.size(),
                                       CancelledError("not tried"));
  bool any = false;
  for (const TaskPlan& t : plan_->tasks) any = any || t.role == role;
  // With no task of `role` (no PS: an allreduce or a batch plan), the job
  // is submitted with the workers', where a failure has a task to name.
  if (!any) return ids;
  if (!submitted_) {
    submitted_ = true;
    const Status s = allocation_.empty() ? Submit() : StartStep();
    if (!s.ok()) {
      for (size_t i = 0; i < ids.size(); ++i) {
        if (plan_->tasks[i].role == role) {
          ids[i] = s;
          break;
        }
      }
      return ids;
    }
    last_query_ = Clock::now();
  }
  for (size_t i = 0; i < plan_->tasks.size(); ++i) {
    const TaskPlan& t = plan_->tasks[i];
    // A reserved slot's task waits in its place in the step (StartReserved).
    if (t.role == role && !plan_->Reserved(t)) ids[i] = ProcessId{};
  }
  return ids;
}

StatusOr<ProcessId> SlurmBackend::StartReserved(size_t i) {
  const TaskPlan& plan = plan_->tasks[i];
  if (!submitted_ || over_) {
    return FailedPreconditionError(
        StrCat("task ", plan.name(), ": the run's Slurm ",
               allocation_.empty() ? "job" : "step", " is not running"));
  }
  // Its `dtf task slurm` waits in the step for this file (AwaitSlotStart).
  const std::string start = (fs::path(plan.dir) / kStartFile).string();
  std::error_code ec;
  fs::create_directories(plan.dir, ec);
  DTF_RETURN_IF_ERROR(WriteFileAtomically(start, "dtf scale\n"));
  tasks_.StartedAgain(i);
  scaled_.resize(plan_->tasks.size());
  scaled_[i] = true;
  events_->Note(StrCat("started ", plan.name(),
                       ", a reserved slot waiting in its place in Slurm ",
                       allocation_.empty() ? "job " : "step ",
                       job_.empty() ? std::string("-") : job_));
  // As for the tasks StartTasks started: it runs where Slurm put it.
  return ProcessId{};
}

bool SlurmBackend::Waiting(size_t i) const {
  return plan_->Reserved(plan_->tasks[i]) &&
         !(i < scaled_.size() && scaled_[i]);
}

bool SlurmBackend::OnlyWaitingSlotsLeft() const {
  for (size_t i = 0; i < tasks_.size(); ++i) {
    if (!tasks_.ended(i) && !Waiting(i)) return false;
  }
  return true;
}

bool SlurmBackend::KillsOnBadExit() const {
  // Elastic workers (min_workers) leave a failed worker out: the step
  // must go on without it, as with restarts.
  return plan_->batch || (plan_->max_restarts == 0 && plan_->min_workers == 0);
}

StatusOr<ProcessId> SlurmBackend::StartAgain(size_t i, bool all) {
  const TaskPlan& plan = plan_->tasks[i];
  // The plan refuses restarts where the step ends with a failed task
  // (--kill-on-bad-exit) and in allreduce runs (`all`).
  if (KillsOnBadExit() || all) {
    return FailedPreconditionError(
        StrCat("task ", plan.name(),
               " cannot be started again alone under Slurm (srun "
               "--kill-on-bad-exit ended the step)"));
  }
  const std::string jobid =
      allocation_.empty() ? job_ : allocation_;  // job_: "1234" or "1234.0"
  if (jobid.empty()) {
    return FailedPreconditionError(
        StrCat("task ", plan.name(), ": no Slurm job to start it again in"));
  }
  std::string node = tasks_.host(i);
  if (node.empty()) {
    StatusOr<std::string> text =
        ReadFileToString(StrCat(plan.dir, "/", kNodeFile));
    if (text.ok()) node = std::string(absl::StripAsciiWhitespace(*text));
  }
  if (node.empty()) {
    return FailedPreconditionError(
        StrCat("task ", plan.name(), ": its node is not known (no ", plan.dir,
               "/", kNodeFile, "), so it cannot be started again"));
  }
  DTF_ASSIGN_OR_RETURN(const std::string srun, slurm::FindSlurmCommand("srun"));
  SpawnOptions spawn;
  spawn.argv = {srun,
                StrCat("--jobid=", jobid),
                "--overlap",
                "--nodes=1",
                "--ntasks=1",
                StrCat("--nodelist=", node),
                "--kill-on-bad-exit=0",
                StrCat("--job-name=dtf-", plan_->run_id)};
  const slurm::SlurmProfile& profile = slurm::SlurmPartOf(*plan_).profile;
  spawn.argv.insert(spawn.argv.end(), profile.srun_args.begin(),
                    profile.srun_args.end());
  for (const std::string& word : RestartArgv(plan)) spawn.argv.push_back(word);
  spawn.argv.push_back("--replace");
  spawn.argv.push_back(std::to_string(i));
  // The profile's [env], which the batch script exports to the job's first
  // step: srun carries the caller's environment into this one.
  spawn.env = plan.env;
  spawn.stdout_file = StrCat(plan.dir, "/", kStepStdout);
  spawn.stderr_file = StrCat(plan.dir, "/", kStepStderr);
  spawn.append = true;
  // A batch job outlives its launcher, and so does a task started again in
  // it; a step of the launcher's own allocation does not.
  spawn.die_with_parent = !allocation_.empty();
  // This attempt's ready file and exit record are the new task's.
  std::error_code ec;
  fs::remove(plan.ready_file, ec);
  fs::remove(plan.exit_file, ec);
  DTF_ASSIGN_OR_RETURN(const ProcessId id, Spawn(spawn));
  restart_sruns_.push_back(id);
  tasks_.StartedAgain(i);
  events_->Note(StrCat("started ", plan.name(), " again on ", node,
                       " in a job step of its own (srun --overlap, pid ",
                       id.pid, ")"));
  // As for the tasks StartTasks started: the task runs where Slurm put it,
  // not as a process of this machine's that tasks.json could name.
  return ProcessId{};
}

void SlurmBackend::ReapRestartSteps(bool kill) {
  std::vector<ProcessId> running;
  for (const ProcessId& id : restart_sruns_) {
    if (kill) SignalGroup(id, SIGKILL);
    if (!TryReap(id.pid)) running.push_back(id);
  }
  restart_sruns_ = std::move(running);
}

void SlurmBackend::CheckExits() {
  // The task that failed first, not one srun stopped for it, is what ends
  // a batch run. (A batch run ends at any failure anyway:
  // restart_policy.h.)
  tasks_.CheckExits(/*failures_first=*/plan_->batch, [&](size_t i,
                                                         const TaskEnd& end) {
    if (!KillsOnBadExit()) return;
    if (end.state == TaskState::kFailed && !first_failed_) first_failed_ = i;
    if (tasks_.FailsGang(i, end) && step_failure_.ok()) {
      // Elsewhere a worker other than the chief may fail and the run go
      // on; here srun --kill-on-bad-exit ends every task with it.
      step_failure_ = absl::AbortedError(ToAbsl(StrCat(
          "task ", plan_->tasks[i].name(), " ", end.how,
          "; Slurm ends the job step when a task fails (srun "
          "--kill-on-bad-exit), so the run cannot go on without it; stopped "
          "the other tasks",
          StderrTail(i))));
    }
  });
}

Status SlurmBackend::CheckJob(bool now) {
  if (over_) return OkStatus();
  if (!allocation_.empty()) {
    if (!srun_exit_ && srun_.pid > 0) srun_exit_ = TryReap(srun_.pid);
    if (srun_exit_ || srun_.pid <= 0) {
      over_ = true;
      over_at_ = Clock::now();
      job_state_ = srun_exit_ ? StrCat("srun ", srun_exit_->Describe())
                              : std::string("not started");
    }
    return OkStatus();
  }
  if (job_.empty()) return OkStatus();
  if (!now && Clock::now() - last_query_ < std::chrono::seconds(1)) {
    return OkStatus();
  }
  last_query_ = Clock::now();
  StatusOr<slurm::SlurmJobState> s = slurm::QuerySlurmJob(job_);
  if (!s.ok()) {
    if (++query_errors_ >= kMaxQueryErrors) return s.status();
    return OkStatus();
  }
  query_errors_ = 0;
  if (s->state != job_state_) {
    if (s->state == "RUNNING" || s->state == "PENDING") {
      events_->Note(StrCat("Slurm job ", job_, " ", s->state));
    }
    job_state_ = s->state;
  }
  if (s->over) {
    over_ = true;
    over_at_ = Clock::now();
  }
  return OkStatus();
}

void SlurmBackend::RecordMissing(bool force) {
  if (!over_) return;
  if (!force && Clock::now() - over_at_ < kExitFileLag) return;
  for (const DirTasks::Missing& m : tasks_.EndMissing()) {
    const TaskPlan& plan = plan_->tasks[m.i];
    TaskEnd end;
    end.state = m.state;
    const bool made = !job_.empty() || srun_.pid > 0;
    if (!made) {
      // The submission failed: its error is the run's.
      end.how = "was not started (no Slurm job was made)";
      end.how_brief = end.how;
      end.restart_how = end.how;
      events_->Ended(m.i, std::move(end));
      continue;
    }
    const std::string job =
        allocation_.empty() ? StrCat("job ", job_) : StrCat("step ", job_);
    if (Waiting(m.i)) {
      // Signalled in its place before it wrote its own record.
      end.state = TaskState::kReserved;
      end.how = "was never started (a reserved slot: dtf scale)";
      end.how_brief = end.how;
      end.restart_how = end.how;
      events_->Note(StrCat(plan.name(), " ", end.how));
      events_->Ended(m.i, std::move(end));
      continue;
    }
    end.how =
        tasks_.ready(m.i)
            ? StrCat("left no exit record (", plan.exit_file,
                     ") when its Slurm ", job, " ended (", job_state_, ")")
            : StrCat("did not start: no exit record (", plan.exit_file,
                     "), and its Slurm ", job, " ended (", job_state_, ")");
    end.how_brief = end.how;
    end.restart_how = end.how;
    end.quote_signalled = true;
    events_->Note(StrCat(plan.name(), " ", end.how));
    events_->Ended(m.i, std::move(end));
  }
}

Status SlurmBackend::Look() {
  ReapRestartSteps(/*kill=*/false);
  tasks_.CheckReady();
  tasks_.PumpOutput(false);
  CheckExits();
  if (!step_failure_.ok()) return step_failure_;
  DTF_RETURN_IF_ERROR(CheckJob(false));
  RecordMissing(false);
  return OkStatus();
}

Status SlurmBackend::StopTasks(bool final) {
  Status result;
  if (job_.empty() && srun_.pid <= 0) {
    // No job or step was made (the submission failed): nothing runs.
    over_ = true;
    job_state_ = "not submitted";
  }
  if (submitted_ && !over_ && OnlyWaitingSlotsLeft()) {
    // Every task has exited (a reserved slot still waiting in its place
    // ends by itself, the chief's exit record there): the job ends on its
    // own (COMPLETED, not CANCELLED) unless it lingers.
    const auto until = Clock::now() + std::chrono::seconds(10);
    while (!over_ && Clock::now() < until) {
      CheckExits();
      if (Status s = CheckJob(true); !s.ok()) break;
      if (!over_) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  if (submitted_ && !over_) {
    if (!allocation_.empty()) {
      if (srun_.pid > 0) SignalGroup(srun_, SIGTERM);
      for (const ProcessId& id : restart_sruns_) SignalGroup(id, SIGTERM);
    } else if (!job_.empty()) {
      result = slurm::CancelSlurmJob(job_);
    }
    // Slurm signals every task; it kills what is left after its KillWait.
    const auto deadline = Clock::now() + grace_ + std::chrono::seconds(30);
    bool killed = false;
    while (result.ok()) {
      tasks_.CheckReady();
      tasks_.PumpOutput(false);
      CheckExits();
      if (Status s = CheckJob(true); !s.ok()) {
        result = s;
        break;
      }
      if (over_) break;
      if (!killed && Clock::now() > deadline - std::chrono::seconds(30)) {
        killed = true;
        if (!allocation_.empty()) {
          if (srun_.pid > 0) SignalGroup(srun_, SIGKILL);
          for (const ProcessId& id : restart_sruns_) SignalGroup(id, SIGKILL);
        } else {
          (void)slurm::CancelSlurmJob(job_, "KILL");
        }
      }
      if (Clock::now() > deadline) {
        result = DeadlineExceededError(
            StrCat("Slurm ", allocation_.empty() ? "job " : "step ", job_,
                   " did not end after scancel"));
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  // The exit records of tasks Slurm ended may lag behind.
  if (submitted_) {
    tasks_.AwaitEnds(kExitFileLag, [&] { CheckExits(); });
  } else {
    CheckExits();
  }
  if (over_ || !submitted_ || final) {
    over_ = true;
    RecordMissing(/*force=*/true);
  }
  if (final) {
    // The steps of tasks started again end with the job (or, inside an
    // allocation, were signalled above): their sruns follow.
    const auto until = Clock::now() + kExitFileLag;
    while (!restart_sruns_.empty() && Clock::now() < until) {
      ReapRestartSteps(/*kill=*/false);
      if (!restart_sruns_.empty()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    ReapRestartSteps(/*kill=*/true);
  }
  if (final) tasks_.PumpOutput(true);
  return result;
}

std::string SlurmBackend::SlurmStderr() const {
  if (!allocation_.empty()) {
    return (fs::path(plan_->run_dir) / kStepStderr).string();
  }
  std::string name = slurm::kBatchStderr;
  const size_t at = name.find("%j");
  if (at != std::string::npos) name.replace(at, 2, job_);
  return (fs::path(plan_->run_dir) / name).string();
}

std::string SlurmBackend::SlurmStderrTail() const {
  return QuoteLastLines(SlurmStderr(), failure_lines_);
}

std::string SlurmBackend::StderrTail(size_t i) {
  return tasks_.StderrTail(i, failure_lines_, SlurmStderrTail());
}

std::string SlurmBackend::ChiefFailed(size_t i, const TaskEnd& end) {
  if (first_failed_ && *first_failed_ != i) {
    const size_t f = *first_failed_;
    return StrCat("task ", plan_->tasks[f].name(), " failed and Slurm ended ",
                  "the job step (srun --kill-on-bad-exit); the chief (",
                  plan_->tasks[i].name(), ") ", end.how, StderrTail(f));
  }
  return StrCat("the chief (", plan_->tasks[i].name(), ") ", end.how,
                StderrTail(i));
}

std::string SlurmBackend::NotReady(size_t i) const {
  const TaskPlan& t = plan_->tasks[i];
  std::string text =
      StrCat("task ", t.name(), " did not write its ready file (", t.ready_file,
             "; Slurm job ", job_.empty() ? "-" : job_, " ",
             job_state_.empty() ? std::string("?") : job_state_, ")");
  // A task started again: what its own step's srun said (it may not
  // have started it).
  const std::string srun_err = StrCat(t.dir, "/", kStepStderr);
  StrAppend(&text, QuoteLastLines(srun_err, failure_lines_));
  return text;
}

StatusOr<std::unique_ptr<Run>> StartSlurmRun(PlanRequest request,
                                             RunOptions options) {
  const char* allocation = std::getenv("SLURM_JOB_ID");
  auto backend = std::make_unique<SlurmBackend>(
      options, allocation == nullptr ? std::string() : std::string(allocation));
  return Run::Start(std::move(backend), std::move(request), std::move(options));
}

std::map<std::string, std::string> SlurmBackend::RecordFields() const {
  if (job_.empty()) return {};
  return {{std::string(slurm::kSlurmJobKey), job_}};
}

}  // namespace dtf::launch
