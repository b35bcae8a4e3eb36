#include "lib/launch/supervisor.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/launch/allreduce_members.h"
#include "lib/launch/restart_policy.h"
#include "lib/launch/run_id.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/run_scale.h"
#include "lib/launch/run_tls.h"

namespace dtf::launch {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string SupervisorSeconds(std::chrono::milliseconds ms) {
  return fmt::format("{:g} s", static_cast<double>(ms.count()) / 1000.0);
}

}  // namespace

Run::Run(std::unique_ptr<Backend> backend, RunOptions options)
    : options_(std::move(options)), backend_(std::move(backend)) {}

Run::~Run() {
  if (!over_) Stop(CancelledError("the launcher went away"));
}

StatusOr<std::unique_ptr<Run>> Run::Start(std::unique_ptr<Backend> backend,
                                          PlanRequest request,
                                          RunOptions options) {
  std::unique_ptr<Run> run(new Run(std::move(backend), std::move(options)));
  DTF_RETURN_IF_ERROR(run->Begin(std::move(request)));
  return run;
}

Status Run::Begin(PlanRequest request) {
  // The tasks' S3 credentials: written beside the secret, never into the
  // plan.
  const std::string s3_credentials = request.s3_credentials;
  StatusOr<Plan> placed = backend_->Place(std::move(request));
  if (!placed.ok()) {
    over_ = true;  // nothing to stop, nothing recorded
    return placed.status();
  }
  plan_ = *std::move(placed);
  backend_->Attach(&plan_, this);
  const Plan& p = plan_;
  record_.run_id = p.run_id;
  record_.started_ms = NowMs();
  record_.supervisor.pid = ::getpid();
  record_.supervisor.start_ticks = ProcessStartTicks(::getpid()).value_or(0);
  record_.detached = options_.detached;
  started_ = Clock::now();
  for (const TaskPlan& t : p.tasks) {
    tasks_.emplace_back();
    TaskRecord tr;
    tr.task = t.name();
    if (p.Reserved(t)) tr.state = TaskState::kReserved;
    record_.tasks.push_back(std::move(tr));
  }

  // The local run directory: the plan, the secret, the TLS files, a
  // directory per task (a resumed run's are there, with their logs).
  DTF_RETURN_IF_ERROR(WriteNewSecret(p.secret_file));
  if (!p.s3_file.empty()) {
    DTF_RETURN_IF_ERROR(WritePrivateRunFile(p.s3_file, s3_credentials));
  }
  std::optional<RunTls> tls;
  if (p.tls) {
    DTF_ASSIGN_OR_RETURN(tls, MakeRunTls(p));
    DTF_RETURN_IF_ERROR(WriteRunTls(*tls, TlsDirOf(p.run_dir)));
  }
  for (const TaskPlan& t : p.tasks) {
    const std::string local =
        (fs::path(p.run_dir) / TaskDirName(t.role, t.index)).string();
    std::error_code ec;
    fs::create_directories(local, ec);
    if (ec) return ErrnoToStatus(ec.value(), local);
  }
  DTF_RETURN_IF_ERROR(WriteFileAtomically(
      (fs::path(p.run_dir) / kPlanFile).string(), PlanToJson(p)));
  WriteRecord();

  if (Status s = backend_->Prepare(tls ? &*tls : nullptr); !s.ok()) {
    return FailStart(s);
  }
  for (Role role : {Role::kPs, Role::kWorker}) {
    std::vector<StatusOr<ProcessId>> ids = backend_->StartTasks(role);
    Status first_error;
    for (size_t i = 0; i < ids.size() && i < tasks_.size(); ++i) {
      if (!ids[i].ok()) {
        if (first_error.ok() &&
            ids[i].status().code() != StatusCode::kCancelled) {
          first_error = ids[i].status();
        }
        continue;
      }
      tasks_[i].started = true;
      record_.tasks[i].process = *ids[i];
    }
    record_.backend = backend_->RecordFields();
    // Every task that did start is stopped again.
    if (!first_error.ok()) return FailStart(first_error);
  }
  record_.state = RunState::kRunning;
  WriteRecord();
  return OkStatus();
}

Status Run::FailStart(const Status& why) {
  failure_ = why;
  stopping_ = true;
  Finish();
  return why;
}

void Run::Note(std::string_view text) {
  if (options_.on_note) options_.on_note(text);
}

bool Run::WantsOutput() const { return options_.on_output != nullptr; }

void Run::Output(size_t task, Stream stream, std::string_view line) {
  if (options_.on_output) options_.on_output(plan_.tasks[task], stream, line);
}

void Run::Ready(size_t task, const std::string& address) {
  tasks_[task].ready = true;
  record_.tasks[task].address = address;
  record_.tasks[task].state = TaskState::kRunning;
  Note(StrCat(plan_.tasks[task].name(), " ready at ", address));
  WriteRecord();
}

void Run::Ended(size_t task, TaskEnd end) {
  // A reserved slot never started (under Slurm it waited in its place in
  // the job step until the run ended) stays reserved.
  if (plan_.Reserved(plan_.tasks[task]) && !tasks_[task].started) return;
  record_.tasks[task].state = end.state;
  tasks_[task].end = std::move(end);
  ended_now_.push_back(task);
  WriteRecord();
}

bool Run::EndsAreStops() const {
  return stopping_ || restarting_ || StopRequested();
}

bool Run::StopRequested() const {
  std::error_code ec;
  return fs::exists(fs::path(plan_.run_dir) / kStopFile, ec);
}

void Run::WriteRecord() {
  // What the backend learns of its engine as the run goes (a Spark
  // application's id) joins the record.
  if (std::map<std::string, std::string> fields = backend_->RecordFields();
      !fields.empty()) {
    record_.backend = std::move(fields);
  }
  Status s = WriteRunRecord(plan_.run_dir, record_);
  if (!s.ok()) Note(StrCat("warning: ", Message(s)));
}

void Run::Fail(const Status& why) {
  if (stopping_) return;
  failure_ = why;
  Stop(why);
}

void Run::Stop(const Status& why) {
  if (over_) return;
  if (!stopping_ || failure_.ok()) failure_ = why;
  stopping_ = true;
  Finish();
}

bool Run::DeadlinePassed() {
  if (options_.deadline.count() <= 0) return false;
  if (Clock::now() - started_ < options_.deadline) return false;
  Stop(DeadlineExceededError(StrCat(
      "the run's deadline (--deadline ",
      fmt::format("{:g}",
                  static_cast<double>(options_.deadline.count()) / 1000.0),
      " s) passed; stopped every task (the chief writes its checkpoint as "
      "it stops)")));
  return true;
}

bool Run::Restart(size_t i) {
  const TaskEnd& end = *tasks_[i].end;
  Note(StrCat(
      RestartNote(plan_, plan_.tasks[i], end.restart_how, tasks_[i].restarts),
      end.signal == 0 ? backend_->StderrTail(i) : std::string()));
  return Respawn(i, /*all=*/false);
}

bool Run::RestartAll(size_t failed, bool without) {
  const TaskEnd& end = *tasks_[failed].end;
  const std::vector<int> members = Members(without ? failed : tasks_.size());
  const std::string note =
      without ? ResizeNote(plan_, plan_.tasks[failed], end.restart_how, members)
              : RestartAllNote(plan_, plan_.tasks[failed], end.restart_how,
                               tasks_[failed].restarts);
  Note(StrCat(note,
              end.signal == 0 ? backend_->StderrTail(failed) : std::string()));
  if (without) tasks_[failed].left_out = true;
  return RestartMembers(members, /*count=*/!without);
}

std::vector<int> Run::Members(size_t but) const {
  std::vector<int> members;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    const TaskPlan& t = plan_.tasks[i];
    if (t.role == Role::kWorker && tasks_[i].started && !tasks_[i].left_out &&
        i != but) {
      members.push_back(t.index);
    }
  }
  return members;
}

bool Run::RestartMembers(const std::vector<int>& members, bool count) {
  // The ends of the tasks stopped here are the launcher's doing: recorded
  // as stopped, and not acted on by Poll.
  restarting_ = true;
  const Status stopped = backend_->StopTasks(/*final=*/false);
  restarting_ = false;
  if (over_ || stopping_) return false;
  if (!stopped.ok()) {
    Fail(stopped);
    return false;
  }
  if (plan_.allreduce()) SetMembers(members, &plan_);
  for (size_t i = 0; i < tasks_.size(); ++i) {
    const TaskPlan& t = plan_.tasks[i];
    if (t.role == Role::kWorker &&
        std::find(members.begin(), members.end(), t.index) == members.end()) {
      continue;
    }
    if (!Respawn(i, /*all=*/true, count)) return false;
  }
  return true;
}

bool Run::Respawn(size_t i, bool all, bool count) {
  StatusOr<ProcessId> id = backend_->StartAgain(i, all);
  if (!id.ok()) {
    Fail(id.status());
    return false;
  }
  Task& t = tasks_[i];
  if (count) ++t.restarts;
  t.restarted_at = Clock::now();
  t.started = true;
  t.end.reset();
  t.ready = false;
  record_.tasks[i].process = *id;
  record_.tasks[i].restarts = t.restarts;
  record_.tasks[i].state = TaskState::kStarting;
  WriteRecord();
  return true;
}

bool Run::OnEnded(size_t i) {
  const TaskPlan& task = plan_.tasks[i];
  const TaskEnd& end = *tasks_[i].end;
  const int live = LiveWorkers(i);
  switch (OnTaskEnded(plan_, task, end.clean(), linger_until_.has_value(),
                      tasks_[i].restarts, live)) {
    case TaskEndAction::kNone:
      return true;
    case TaskEndAction::kChiefExited:
      linger_until_ = Clock::now() + options_.grace;
      return true;
    case TaskEndAction::kRestart:
      return Restart(i);
    case TaskEndAction::kRestartAll:
      return RestartAll(i);
    case TaskEndAction::kResizeAll:
      return RestartAll(i, /*without=*/true);
    case TaskEndAction::kGoOn:
      // A worker other than the chief is not needed to finish: the chief
      // and the parameter servers stop waiting for it after
      // heartbeat_timeout, and the run goes on with the rest.
      Note(StrCat(
          "task ", task.name(), " ", end.how_brief,
          "; the run goes on without it",
          plan_.min_workers > 0
              ? StrCat(" (", live, " of ", StartedWorkers(plan_, record_),
                       " workers left; min_workers = ", plan_.min_workers, ")")
              : std::string(),
          end.signal == 0 || end.quote_signalled ? backend_->StderrTail(i)
                                                 : std::string()));
      return true;
    case TaskEndAction::kFailAllreduce:
      Fail(absl::AbortedError(
          ToAbsl(StrCat(AllreduceWorkerLost(plan_, task, end.how),
                        backend_->StderrTail(i)))));
      return false;
    case TaskEndAction::kFailBelowMin:
      Fail(absl::AbortedError(
          ToAbsl(StrCat(BelowMinWorkers(plan_, task, end.how, live),
                        backend_->StderrTail(i)))));
      return false;
    case TaskEndAction::kFail:
      Fail(absl::AbortedError(
          ToAbsl(StrCat("task ", task.name(), " ", end.how,
                        " before the run ended; stopped the other tasks",
                        backend_->StderrTail(i)))));
      return false;
  }
  return true;
}

int Run::LiveWorkers(size_t i) const {
  int live = 0;
  for (size_t j = 0; j < tasks_.size(); ++j) {
    // In an allreduce run the ranks that ended in the same look as task i
    // ended of its loss (their collectives failed): live all the same.
    const bool alive =
        !tasks_[j].end ||
        (plan_.allreduce() && std::find(ended_now_.begin(), ended_now_.end(),
                                        j) != ended_now_.end());
    if (j != i && plan_.tasks[j].role == Role::kWorker && tasks_[j].started &&
        !tasks_[j].left_out && alive) {
      ++live;
    }
  }
  return live;
}

Status Run::Scale(int workers) {
  const int started = StartedWorkers(plan_, record_);
  DTF_RETURN_IF_ERROR(CheckScale(plan_, started, workers));
  if (over_ || stopping_ || linger_until_) {
    return FailedPreconditionError(
        StrCat("run ", plan_.run_id, " is ending: no worker is started"));
  }
  if (plan_.allreduce()) return ScaleAllreduce(workers);
  std::string names;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    const TaskPlan& t = plan_.tasks[i];
    if (!plan_.Reserved(t) || t.index >= workers || tasks_[i].started) {
      continue;
    }
    StatusOr<ProcessId> id = backend_->StartReserved(i);
    if (!id.ok()) {
      WriteRecord();
      return id.status();
    }
    Task& task = tasks_[i];
    task.started = true;
    task.restarted_at = Clock::now();
    record_.tasks[i].process = *id;
    record_.tasks[i].state = TaskState::kStarting;
    StrAppend(&names, names.empty() ? "" : ", ", t.name());
  }
  WriteRecord();
  if (!names.empty()) {
    Note(StrCat("dtf scale: started ", names, " (",
                StartedWorkers(plan_, record_), " of ", plan_.workers,
                " worker slots)"));
  }
  return OkStatus();
}

Status Run::ScaleAllreduce(int workers) {
  std::vector<int> members = Members(tasks_.size());
  std::string names;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    const TaskPlan& t = plan_.tasks[i];
    if (!plan_.Reserved(t) || t.index >= workers || tasks_[i].started) {
      continue;
    }
    tasks_[i].started = true;
    members.push_back(t.index);
    StrAppend(&names, names.empty() ? "" : ", ", t.name());
  }
  if (names.empty()) return OkStatus();
  std::sort(members.begin(), members.end());
  Note(
      StrCat("dtf scale: every worker starts again from the last checkpoint "
             "with ",
             names, ", at ", members.size(), " ranks (workers ",
             MembersList(members), ")"));
  if (!RestartMembers(members, /*count=*/false)) {
    return FailedPreconditionError(
        StrCat("run ", plan_.run_id, " is ending: ", Message(failure_)));
  }
  return OkStatus();
}

void Run::TakeScaleRequest() {
  // Read once each time it is written: every look costs one stat.
  const fs::path path = fs::path(plan_.run_dir) / kScaleFile;
  std::error_code ec;
  const fs::file_time_type written = fs::last_write_time(path, ec);
  if (ec || written == scale_seen_) return;
  scale_seen_ = written;
  StatusOr<std::optional<ScaleRequest>> request =
      ReadScaleRequest(plan_.run_dir);
  if (!request.ok()) {
    Note(StrCat("dtf scale: ", Message(request.status())));
    fs::remove(path, ec);
    return;
  }
  if (!request->has_value()) return;
  if (Status s = Scale((*request)->workers); !s.ok()) {
    Note(StrCat("dtf scale: ", Message(s)));
  }
}

bool Run::ChiefDone() {
  bool others = false;
  for (const Task& t : tasks_) others = others || (t.started && !t.end);
  if (others && Clock::now() < *linger_until_) return false;
  if (others) {
    Note(StrCat("the chief exited ", SupervisorSeconds(options_.grace),
                " ago; stopping the tasks still running"));
    stopping_ = true;
  }
  Finish();
  return true;
}

bool Run::ReadyTimedOut() {
  // Counted from the run's start, or from a restarted task's restart.
  for (size_t i = 0; i < tasks_.size(); ++i) {
    const Task& t = tasks_[i];
    if (!t.started || t.ready || t.end || !backend_->Reachable(i)) continue;
    if (Clock::now() - std::max(started_, t.restarted_at) <=
        options_.start_timeout) {
      continue;
    }
    Fail(DeadlineExceededError(StrCat(backend_->NotReady(i), " within ",
                                      SupervisorSeconds(options_.start_timeout),
                                      "; stopped every task",
                                      backend_->StderrTail(i))));
    return true;
  }
  return false;
}

bool Run::Poll() {
  if (over_) return true;
  if (options_.cancel != nullptr && options_.cancel->load()) {
    Stop(CancelledError(
        StrCat("interrupted; stopped every task of run ", plan_.run_id)));
    return true;
  }
  if (const std::chrono::milliseconds every = backend_->LookEvery();
      every.count() > 0) {
    const auto now = Clock::now();
    if (now - last_look_ < every) return false;
    last_look_ = now;
  }
  if (backend_->StopsOnRequest() && !linger_until_ && StopRequested()) {
    Stop(CancelledError(
        StrCat("run ", plan_.run_id, " was stopped (dtf stop)")));
    return true;
  }
  if (Status s = backend_->Tend(); !s.ok()) {
    Fail(s);
    return true;
  }
  if (!linger_until_ && DeadlinePassed()) return true;
  ended_now_.clear();
  if (Status s = backend_->Look(); !s.ok()) {
    Fail(s);
    return true;
  }
  std::vector<size_t> ended = ended_now_;
  if (plan_.allreduce()) {
    // A rank killed makes the chief fail at its next collective, and both
    // ends can show in one look: the lost rank's end goes first, so that
    // it restarts every worker (as restarts allow) rather than the
    // chief's ending the run.
    std::stable_partition(ended.begin(), ended.end(),
                          [&](size_t i) { return !plan_.tasks[i].chief; });
  }
  for (size_t i : ended) {
    if (over_) return true;
    const TaskEnd& end = *tasks_[i].end;
    if (!end.clean() && !linger_until_ && StopRequested()) {
      Stop(CancelledError(
          StrCat("run ", plan_.run_id, " was stopped (dtf stop)")));
      return true;
    }
    const TaskEndAction action = OnTaskEnded(
        plan_, plan_.tasks[i], end.clean(), linger_until_.has_value(),
        tasks_[i].restarts, LiveWorkers(i));
    if (action == TaskEndAction::kRestartAll ||
        action == TaskEndAction::kResizeAll) {
      // Every task has started again: the other ends of this look are
      // those of tasks now restarted.
      return !RestartAll(i, action == TaskEndAction::kResizeAll);
    }
    if (!OnEnded(i)) return true;
  }
  if (over_) return true;
  if (plan_.launch_workers > 0 && !linger_until_) TakeScaleRequest();
  if (plan_.batch) {
    // Every task ended 0 (a failure has ended the run above).
    bool all = true;
    for (const Task& t : tasks_) all = all && t.end.has_value();
    if (all) {
      Finish();
      return true;
    }
  } else if (tasks_[static_cast<size_t>(plan_.ps)].end) {
    return ChiefDone();
  }
  return ReadyTimedOut();
}

RunOutcome Run::Wait() {
  const std::chrono::milliseconds every = backend_->LookEvery();
  while (!Poll()) {
    std::this_thread::sleep_for(every.count() > 0 ? every : options_.poll);
  }
  return outcome();
}

void Run::Finish() {
  bool running = false;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    const Task& t = tasks_[i];
    running = running || (t.started && !t.end && backend_->Reachable(i));
  }
  if (running && stopping_) Note("stopping every task");
  const Status stopped = backend_->StopTasks(/*final=*/true);
  if (!stopped.ok() && !stopping_) {
    failure_ = stopped;
    stopping_ = true;
  }
  backend_->FetchMetrics();
  outcome_ = MakeOutcome();
  record_.state = outcome_.state;
  record_.exit_code = outcome_.exit_code;
  record_.message = std::string(Message(outcome_.status));
  record_.ended_ms = NowMs();
  WriteRecord();
  over_ = true;
}

RunOutcome Run::MakeOutcome() {
  RunOutcome o;
  if (!failure_.ok()) {
    o.status = failure_;
    o.state = failure_.code() == StatusCode::kCancelled ? RunState::kStopped
                                                        : RunState::kFailed;
    return o;
  }
  const size_t chief = static_cast<size_t>(plan_.ps);
  const std::optional<TaskEnd>& end = tasks_[chief].end;
  if (!end || !end->exit_code) {
    o.status = InternalError("the run ended before its chief");
    o.state = RunState::kFailed;
    return o;
  }
  o.exit_code = *end->exit_code;
  if (o.exit_code == 0) {
    o.state = RunState::kSucceeded;
    return o;
  }
  o.state = RunState::kFailed;
  o.status = absl::AbortedError(ToAbsl(backend_->ChiefFailed(chief, *end)));
  return o;
}

}  // namespace dtf::launch
