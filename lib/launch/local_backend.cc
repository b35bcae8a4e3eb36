#include "lib/launch/local_backend.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <thread>

#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/launch/log_tail.h"
#include "lib/launch/restart_policy.h"
#include "lib/launch/run_id.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/run_tls.h"

namespace dtf::launch {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) {
    s.remove_suffix(1);
  }
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) {
    s.remove_prefix(1);
  }
  return std::string(s);
}

std::string Seconds(std::chrono::milliseconds ms) {
  return fmt::format("{:g} s", static_cast<double>(ms.count()) / 1000.0);
}

Status MakeDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0) return ErrnoToStatus(errno, path);
  return OkStatus();
}

}  // namespace

LocalRun::LocalRun(Plan plan, RunOptions options)
    : plan_(std::move(plan)), options_(std::move(options)) {}

StatusOr<std::unique_ptr<LocalRun>> LocalRun::Start(PlanRequest request,
                                                    RunOptions options) {
  // Everything that can be checked is checked before a file is written.
  const std::string wanted_id = request.run_id;
  request.run_id = kUnchosenRunId;
  request.ports.clear();
  DTF_ASSIGN_OR_RETURN(Plan draft, MakePlan(request));
  std::vector<HeldPort> ports;
  for (const TaskPlan& t : draft.tasks) {
    StatusOr<HeldPort> port = HoldPort(t.host, t.port);
    if (!port.ok()) {
      return Annotate(port.status(), StrCat("task ", t.name()));
    }
    request.ports.push_back(port->port());
    ports.push_back(std::move(*port));
  }
  const std::string runs_dir = fs::path(draft.run_dir).parent_path().string();
  if (request.resume) {
    DTF_RETURN_IF_ERROR(ReopenRunDir(runs_dir, wanted_id));
    request.run_id = wanted_id;
  } else {
    DTF_ASSIGN_OR_RETURN(request.run_id, CreateRunDir(runs_dir, wanted_id));
  }
  DTF_ASSIGN_OR_RETURN(Plan plan, MakePlan(request));

  std::unique_ptr<LocalRun> run(new LocalRun(std::move(plan), options));
  const Plan& p = run->plan_;
  run->record_.run_id = p.run_id;
  run->record_.started_ms = NowMs();
  run->record_.supervisor.pid = ::getpid();
  run->record_.supervisor.start_ticks =
      ProcessStartTicks(::getpid()).value_or(0);
  run->record_.detached = options.detached;
  run->started_ = Clock::now();
  for (size_t i = 0; i < p.tasks.size(); ++i) {
    Task task;
    task.plan = &p.tasks[i];
    task.port = std::move(ports[i]);
    run->tasks_.push_back(std::move(task));
    TaskRecord tr;
    tr.task = p.tasks[i].name();
    run->record_.tasks.push_back(std::move(tr));
    run->tails_.push_back(std::make_unique<LineTail>(p.tasks[i].stdout_file));
    run->tails_.push_back(std::make_unique<LineTail>(p.tasks[i].stderr_file));
    if (p.resume) {
      // The logs of the run's earlier attempt are not shown again.
      run->tails_[run->tails_.size() - 2]->SkipToEnd();
      run->tails_.back()->SkipToEnd();
    }
  }

  auto fail = [&](const Status& status) {
    run->failure_ = status;
    run->stopping_ = true;
    run->Finish();
    return status;
  };
  DTF_RETURN_IF_ERROR(WriteNewSecret(p.secret_file));
  if (p.tls) {
    DTF_ASSIGN_OR_RETURN(const RunTls tls, MakeRunTls(p));
    DTF_RETURN_IF_ERROR(WriteRunTls(tls, TlsDirOf(p.run_dir)));
  }
  for (const TaskPlan& t : p.tasks) {
    // A resumed run's task directories are there, with their logs.
    if (!(p.resume && fs::is_directory(t.dir))) {
      DTF_RETURN_IF_ERROR(MakeDir(t.dir));
    }
  }
  DTF_RETURN_IF_ERROR(WriteFileAtomically(
      (fs::path(p.run_dir) / kPlanFile).string(), PlanToJson(p)));
  run->WriteRecord();
  for (size_t i = 0; i < p.tasks.size(); ++i) {
    const TaskPlan& t = p.tasks[i];
    SpawnOptions spawn;
    spawn.argv = t.argv;
    spawn.env = t.env;
    spawn.stdout_file = t.stdout_file;
    spawn.stderr_file = t.stderr_file;
    spawn.append = p.resume;
    StatusOr<ProcessId> id = Spawn(spawn);
    if (!id.ok()) {
      return fail(
          Annotate(id.status(), StrCat("task ", t.name(), " failed to start")));
    }
    run->tasks_[i].process = *id;
    run->record_.tasks[i].process = *id;
    run->Note(
        StrCat("started ", t.name(), " (pid ", id->pid, ") on ", t.address()));
  }
  run->record_.state = "running";
  run->WriteRecord();
  return run;
}

LocalRun::~LocalRun() {
  if (!over_) Stop(CancelledError("the launcher went away"));
}

bool LocalRun::StopRequested() const {
  std::error_code ec;
  return fs::exists(fs::path(plan_.run_dir) / kStopFile, ec);
}

void LocalRun::Note(std::string_view text) const {
  if (options_.on_note) options_.on_note(text);
}

void LocalRun::WriteRecord() {
  Status s = WriteRunRecord(plan_.run_dir, record_);
  if (!s.ok()) Note(StrCat("warning: ", Message(s)));
}

void LocalRun::PumpOutput(bool flush) {
  for (size_t i = 0; i < tails_.size(); ++i) {
    const TaskPlan& task = *tasks_[i / 2].plan;
    const Stream stream = i % 2 == 0 ? Stream::kStdout : Stream::kStderr;
    tails_[i]->Poll(
        [&](std::string_view line) {
          if (options_.on_output) options_.on_output(task, stream, line);
        },
        flush);
  }
}

void LocalRun::CheckReady() {
  bool changed = false;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    Task& t = tasks_[i];
    if (t.ready || t.exit) continue;
    StatusOr<std::string> text = ReadFileToString(t.plan->ready_file);
    if (!text.ok()) continue;
    const std::string address = Trim(*text);
    if (address.empty()) continue;  // being written
    t.ready = true;
    t.address = address;
    t.port.Release();
    record_.tasks[i].address = address;
    record_.tasks[i].state = "running";
    changed = true;
    Note(StrCat(t.plan->name(), " ready at ", address));
  }
  if (changed) WriteRecord();
}

std::vector<size_t> LocalRun::Reap() {
  std::vector<size_t> exited;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    Task& t = tasks_[i];
    if (t.exit || t.process.pid <= 0) continue;
    t.exit = TryReap(t.process.pid);
    if (!t.exit) continue;
    t.port.Release();
    RecordExit(i);
    exited.push_back(i);
  }
  return exited;
}

void LocalRun::RecordExit(size_t i) {
  const Task& t = tasks_[i];
  ExitRecord e;
  e.task = t.plan->name();
  e.exit_code = t.exit->ShellCode();
  e.signal = t.exit->signal;
  e.finished_ms = NowMs();
  const bool clean = t.exit->code == 0 && t.exit->signal == 0;
  e.state = clean                                         ? "exited"
            : stopping_ || restarting_ || StopRequested() ? "stopped"
                                                          : "failed";
  if (t.exit->code < 0 && t.exit->signal == 0) {
    e.state = "lost";
    e.exit_code.reset();
  }
  record_.tasks[i].state = e.state;
  Status s = WriteExitRecord(t.plan->exit_file, e);
  if (!s.ok()) Note(StrCat("warning: ", Message(s)));
  WriteRecord();
  Note(StrCat(t.plan->name(), " ", t.exit->Describe()));
}

bool LocalRun::Restart(size_t i) {
  const Task& t = tasks_[i];
  Note(StrCat(RestartNote(plan_, *t.plan, t.exit->Describe(), t.restarts),
              t.exit->signal == 0 ? StderrTail(i) : std::string()));
  return Respawn(i);
}

bool LocalRun::RestartAll(size_t failed) {
  const Task& f = tasks_[failed];
  Note(StrCat(RestartAllNote(plan_, *f.plan, f.exit->Describe(), f.restarts),
              f.exit->signal == 0 ? StderrTail(failed) : std::string()));
  // The ends of the tasks stopped here are the launcher's doing: recorded
  // as stopped, and not looked at by Poll.
  restarting_ = true;
  StopAll();
  restarting_ = false;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    if (!tasks_[i].exit) {
      Fail(InternalError(StrCat("task ", tasks_[i].plan->name(),
                                " did not stop before the restart")));
      return false;
    }
  }
  for (size_t i = 0; i < tasks_.size(); ++i) {
    if (!Respawn(i)) return false;
    Note(StrCat(tasks_[i].plan->name(), " started again (pid ",
                tasks_[i].process.pid, ")"));
  }
  return true;
}

bool LocalRun::Respawn(size_t i) {
  Task& t = tasks_[i];
  const TaskPlan& plan = *t.plan;
  std::error_code ec;
  fs::remove(plan.ready_file, ec);
  fs::remove(plan.exit_file, ec);
  SpawnOptions spawn;
  spawn.argv = RestartArgv(plan);
  spawn.env = plan.env;
  spawn.stdout_file = plan.stdout_file;
  spawn.stderr_file = plan.stderr_file;
  spawn.append = true;
  StatusOr<ProcessId> id = Spawn(spawn);
  if (!id.ok()) {
    Fail(Annotate(id.status(),
                  StrCat("task ", plan.name(), " failed to start again")));
    return false;
  }
  ++t.restarts;
  t.restarted_at = Clock::now();
  t.process = *id;
  t.exit.reset();
  t.ready = false;
  record_.tasks[i].process = *id;
  record_.tasks[i].restarts = t.restarts;
  record_.tasks[i].state = "starting";
  WriteRecord();
  return true;
}

std::string LocalRun::StderrTail(size_t i) const {
  const TaskPlan& t = *tasks_[i].plan;
  std::vector<std::string> lines =
      LastLines(t.stderr_file, options_.failure_lines);
  if (lines.empty())
    return StrCat(" (its stderr, ", t.stderr_file, ", is empty)");
  std::string out = StrCat("; the last lines of ", t.stderr_file, ":");
  for (const std::string& line : lines) StrAppend(&out, "\n  ", line);
  return out;
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

bool Run::DeadlinePassed(const RunOptions& options,
                         std::chrono::steady_clock::time_point started) {
  if (options.deadline.count() <= 0) return false;
  if (std::chrono::steady_clock::now() - started < options.deadline) {
    return false;
  }
  Stop(DeadlineExceededError(StrCat(
      "the run's deadline (--deadline ",
      fmt::format("{:g}",
                  static_cast<double>(options.deadline.count()) / 1000.0),
      " s) passed; stopped every task (the chief writes its checkpoint as "
      "it stops)")));
  return true;
}

std::optional<RunOutcome> Run::FailureOutcome() const {
  if (failure_.ok()) return std::nullopt;
  RunOutcome o;
  o.status = failure_;
  o.state = failure_.code() == StatusCode::kCancelled ? "stopped" : "failed";
  return o;
}

void LocalRun::StopAll() {
  // Every group is stopped, including what a task that exited left behind.
  std::vector<std::pair<std::string, ProcessId>> groups;
  for (const Task& t : tasks_) {
    if (t.process.pid > 0) groups.emplace_back(t.plan->name(), t.process);
  }
  const std::vector<std::string> killed = StopGroups(
      groups, options_.grace,
      [this] {
        Reap();
        PumpOutput(false);
      },
      IsParameterServer);
  for (const std::string& name : killed) {
    Note(StrCat(name, " did not stop within ", Seconds(options_.grace),
                "; killed"));
  }
  // Children the group scan no longer sees (zombies) are reaped here.
  for (int round = 0; round < 100; ++round) {
    Reap();
    bool all = true;
    for (const Task& t : tasks_) {
      if (t.process.pid > 0 && !t.exit) all = false;
    }
    if (all) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void LocalRun::Finish() {
  bool any_running = false;
  for (const Task& t : tasks_) {
    if (t.process.pid > 0 && !t.exit) any_running = true;
  }
  if (any_running && stopping_) Note("stopping every task");
  StopAll();
  for (Task& t : tasks_) t.port.Release();
  PumpOutput(true);
  const RunOutcome o = outcome();
  record_.state = o.state;
  record_.exit_code = o.exit_code;
  record_.message = std::string(Message(o.status));
  record_.ended_ms = NowMs();
  WriteRecord();
  over_ = true;
}

RunOutcome LocalRun::outcome() const {
  RunOutcome o;
  const Task& chief = tasks_[static_cast<size_t>(plan_.ps)];
  if (std::optional<RunOutcome> failed = FailureOutcome()) return *failed;
  if (!chief.exit || (chief.exit->code < 0 && chief.exit->signal == 0)) {
    o.status = InternalError("the run ended before its chief");
    o.state = "failed";
    return o;
  }
  o.exit_code = chief.exit->ShellCode();
  if (o.exit_code == 0) {
    o.state = "succeeded";
    return o;
  }
  o.state = "failed";
  o.status = absl::AbortedError(ToAbsl(
      StrCat("the chief (", chief.plan->name(), ") ", chief.exit->Describe(),
             StderrTail(static_cast<size_t>(plan_.ps)))));
  return o;
}

bool LocalRun::Poll() {
  if (over_) return true;
  if (options_.cancel != nullptr && options_.cancel->load()) {
    Stop(CancelledError(
        StrCat("interrupted; stopped every task of run ", plan_.run_id)));
    return true;
  }
  CheckReady();
  PumpOutput(false);
  const size_t chief = static_cast<size_t>(plan_.ps);
  if (!linger_until_ && DeadlinePassed(options_, started_)) return true;
  for (size_t i : Reap()) {
    const Task& t = tasks_[i];
    const bool clean = t.exit->code == 0 && t.exit->signal == 0;
    if (!clean && !linger_until_ && StopRequested()) {
      Stop(CancelledError(
          StrCat("run ", plan_.run_id, " was stopped (dtf stop)")));
      return true;
    }
    switch (OnTaskEnded(plan_, *t.plan, clean, linger_until_.has_value(),
                        t.restarts)) {
      case TaskEndAction::kNone:
        continue;
      case TaskEndAction::kChiefExited:
        linger_until_ = Clock::now() + options_.grace;
        continue;
      case TaskEndAction::kRestart:
        if (Restart(i)) continue;
        return true;
      case TaskEndAction::kRestartAll:
        // Every task has started again: the other ends of this look are
        // those of tasks now restarted.
        return !RestartAll(i);
      case TaskEndAction::kGoOn:
        // A worker other than the chief is not needed to finish: the chief
        // and the parameter servers stop waiting for it after
        // heartbeat_timeout, and the run goes on with the rest.
        Note(StrCat("task ", t.plan->name(), " ", t.exit->Describe(),
                    "; the run goes on without it",
                    t.exit->signal == 0 ? StderrTail(i) : std::string()));
        continue;
      case TaskEndAction::kFailAllreduce:
        Fail(absl::AbortedError(ToAbsl(
            StrCat(AllreduceWorkerLost(plan_, *t.plan, t.exit->Describe()),
                   StderrTail(i)))));
        return true;
      case TaskEndAction::kFail:
        Fail(absl::AbortedError(ToAbsl(StrCat(
            "task ", t.plan->name(), " ", t.exit->Describe(),
            " before the run ended; stopped the other tasks", StderrTail(i)))));
        return true;
    }
  }
  if (tasks_[chief].exit) {
    bool others = false;
    for (const Task& t : tasks_) {
      if (!t.exit) others = true;
    }
    if (!others || Clock::now() >= *linger_until_) {
      if (others) {
        Note(StrCat("the chief exited ", Seconds(options_.grace),
                    " ago; stopping the tasks still running"));
        stopping_ = true;
      }
      Finish();
      return true;
    }
    return false;
  }
  // Counted from the run's start, or from a restarted task's restart.
  for (size_t i = 0; i < tasks_.size(); ++i) {
    if (tasks_[i].ready || tasks_[i].exit) continue;
    if (Clock::now() - std::max(started_, tasks_[i].restarted_at) >
        options_.start_timeout) {
      Fail(DeadlineExceededError(
          StrCat("task ", tasks_[i].plan->name(),
                 " did not write its ready file (", tasks_[i].plan->ready_file,
                 ") within ", Seconds(options_.start_timeout),
                 "; stopped every task", StderrTail(i))));
      return true;
    }
  }
  return false;
}

RunOutcome LocalRun::Wait() {
  while (!Poll()) std::this_thread::sleep_for(options_.poll);
  return outcome();
}

}  // namespace dtf::launch
