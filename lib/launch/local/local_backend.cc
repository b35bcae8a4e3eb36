#include "lib/launch/local/local_backend.h"

#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <thread>

#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/launch/log_tail.h"
#include "lib/launch/plan_hooks.h"
#include "lib/launch/run_id.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/task_files.h"

namespace dtf::launch {
namespace {

namespace fs = std::filesystem;

std::string LocalSeconds(std::chrono::milliseconds ms) {
  return fmt::format("{:g} s", static_cast<double>(ms.count()) / 1000.0);
}

}  // namespace

LocalBackend::LocalBackend(const RunOptions& options)
    : grace_(options.grace), failure_lines_(options.failure_lines) {}

LocalBackend::~LocalBackend() = default;

StatusOr<Plan> LocalBackend::Place(PlanRequest request) {
  // Everything that can be checked is checked before a file is written.
  const std::string wanted_id = request.run_id;
  request.run_id = kUnchosenRunId;
  request.ports.clear();
  DTF_ASSIGN_OR_RETURN(Plan draft, MakePlanWith(request, PlanHooks()));
  ports_.clear();
  for (const TaskPlan& t : draft.tasks) {
    StatusOr<HeldPort> port = HoldPort(t.host, t.port);
    if (!port.ok()) {
      return Annotate(port.status(), StrCat("task ", t.name()));
    }
    request.ports.push_back(port->port());
    ports_.push_back(std::move(*port));
  }
  const std::string runs_dir = fs::path(draft.run_dir).parent_path().string();
  DTF_ASSIGN_OR_RETURN(request.run_id,
                       ClaimRunDir(runs_dir, wanted_id, request.resume));
  return MakePlanWith(request, PlanHooks());
}

void LocalBackend::Attach(const Plan* plan, BackendEvents* events) {
  plan_ = plan;
  events_ = events;
  const Plan& p = *plan;
  tasks_.resize(p.tasks.size());
  for (size_t i = 0; i < p.tasks.size() && i < ports_.size(); ++i) {
    tasks_[i].port = std::move(ports_[i]);
  }
  tails_ = OpenTaskTails(p);
  ports_.clear();
}

Status LocalBackend::Prepare(const RunTls*) {
  // The tasks read the run directory the supervisor wrote: nothing else.
  return OkStatus();
}

StatusOr<ProcessId> LocalBackend::Spawn(size_t i, std::vector<std::string> argv,
                                        bool append) {
  const TaskPlan& t = plan_->tasks[i];
  SpawnOptions spawn;
  spawn.argv = std::move(argv);
  spawn.env = t.env;
  spawn.stdout_file = t.stdout_file;
  spawn.stderr_file = t.stderr_file;
  spawn.append = append;
  return launch::Spawn(spawn);
}

std::vector<StatusOr<ProcessId>> LocalBackend::StartTasks(Role role) {
  std::vector<StatusOr<ProcessId>> ids(plan_->tasks.size(),
                                       CancelledError("not tried"));
  for (size_t i = 0; i < plan_->tasks.size(); ++i) {
    const TaskPlan& t = plan_->tasks[i];
    if (t.role != role || plan_->Reserved(t)) continue;
    StatusOr<ProcessId> id = Spawn(i, t.argv, plan_->resume);
    if (!id.ok()) {
      ids[i] =
          Annotate(id.status(), StrCat("task ", t.name(), " failed to start"));
      break;
    }
    tasks_[i].process = *id;
    ids[i] = *id;
    events_->Note(
        StrCat("started ", t.name(), " (pid ", id->pid, ") on ", t.address()));
  }
  return ids;
}

StatusOr<ProcessId> LocalBackend::Respawn(size_t i,
                                          std::vector<std::string> argv,
                                          bool append, std::string_view what) {
  Task& t = tasks_[i];
  const TaskPlan& plan = plan_->tasks[i];
  std::error_code ec;
  fs::remove(plan.ready_file, ec);
  fs::remove(plan.exit_file, ec);
  StatusOr<ProcessId> id = Spawn(i, std::move(argv), append);
  if (!id.ok()) {
    return Annotate(id.status(), StrCat("task ", plan.name(), " ", what));
  }
  t.process = *id;
  t.exit.reset();
  t.ready = false;
  return *id;
}

StatusOr<ProcessId> LocalBackend::StartReserved(size_t i) {
  const TaskPlan& t = plan_->tasks[i];
  DTF_ASSIGN_OR_RETURN(ProcessId id,
                       Respawn(i, t.argv, plan_->resume, "failed to start"));
  events_->Note(
      StrCat("started ", t.name(), " (pid ", id.pid, ") on ", t.address()));
  return id;
}

StatusOr<ProcessId> LocalBackend::StartAgain(size_t i, bool all) {
  const TaskPlan& plan = plan_->tasks[i];
  DTF_ASSIGN_OR_RETURN(
      ProcessId id,
      Respawn(i, RestartArgv(plan), /*append=*/true, "failed to start again"));
  if (all) {
    events_->Note(StrCat(plan.name(), " started again (pid ", id.pid, ")"));
  }
  return id;
}

Status LocalBackend::Look() {
  CheckReady();
  PumpOutput(false);
  Reap();
  return OkStatus();
}

void LocalBackend::PumpOutput(bool flush) {
  PollTaskTails(tails_, *events_, flush);
}

void LocalBackend::CheckReady() {
  for (size_t i = 0; i < tasks_.size(); ++i) {
    Task& t = tasks_[i];
    if (t.ready || t.exit) continue;
    std::optional<std::string> address =
        ReadReadyAddress(plan_->tasks[i].ready_file);
    if (!address) continue;
    t.ready = true;
    t.port.Release();
    events_->Ready(i, *address);
  }
}

void LocalBackend::Reap() {
  for (size_t i = 0; i < tasks_.size(); ++i) {
    Task& t = tasks_[i];
    if (t.exit || t.process.pid <= 0) continue;
    t.exit = TryReap(t.process.pid);
    if (!t.exit) continue;
    t.port.Release();
    RecordExit(i);
  }
}

void LocalBackend::RecordExit(size_t i) {
  const Task& t = tasks_[i];
  const TaskPlan& plan = plan_->tasks[i];
  ExitRecord e;
  e.task = plan.name();
  e.exit_code = t.exit->ShellCode();
  e.signal = t.exit->signal;
  e.finished_ms = NowMs();
  const bool clean = t.exit->code == 0 && t.exit->signal == 0;
  e.state = clean                     ? TaskState::kExited
            : events_->EndsAreStops() ? TaskState::kStopped
                                      : TaskState::kFailed;
  if (t.exit->code < 0 && t.exit->signal == 0) {
    e.state = TaskState::kLost;
    e.exit_code.reset();
  }
  Status s = WriteExitRecord(plan.exit_file, e);
  if (!s.ok()) events_->Note(StrCat("warning: ", Message(s)));
  TaskEnd end;
  end.state = e.state;
  end.exit_code = e.exit_code;
  end.signal = e.signal;
  end.how = t.exit->Describe();
  end.how_brief = end.how;
  end.restart_how = end.how;
  events_->Ended(i, std::move(end));
  events_->Note(StrCat(plan.name(), " ", t.exit->Describe()));
}

void LocalBackend::StopAll() {
  // Every group is stopped, including what a task that exited left behind.
  std::vector<std::pair<std::string, ProcessId>> groups;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    if (tasks_[i].process.pid > 0) {
      groups.emplace_back(plan_->tasks[i].name(), tasks_[i].process);
    }
  }
  const std::vector<std::string> killed = StopGroups(
      groups, grace_,
      [this] {
        Reap();
        PumpOutput(false);
      },
      IsParameterServer);
  for (const std::string& name : killed) {
    events_->Note(StrCat(name, " did not stop within ", LocalSeconds(grace_),
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

Status LocalBackend::StopTasks(bool final) {
  StopAll();
  if (final) {
    for (Task& t : tasks_) t.port.Release();
    PumpOutput(true);
    return OkStatus();
  }
  // A reserved slot never started has no process to stop.
  for (size_t i = 0; i < tasks_.size(); ++i) {
    if (tasks_[i].process.pid > 0 && !tasks_[i].exit) {
      return InternalError(StrCat("task ", plan_->tasks[i].name(),
                                  " did not stop before the restart"));
    }
  }
  return OkStatus();
}

std::string LocalBackend::StderrTail(size_t i) {
  const TaskPlan& t = plan_->tasks[i];
  std::vector<std::string> lines = LastLines(t.stderr_file, failure_lines_);
  if (lines.empty()) {
    return StrCat(" (its stderr, ", t.stderr_file, ", is empty)");
  }
  std::string out = StrCat("; the last lines of ", t.stderr_file, ":");
  for (const std::string& line : lines) StrAppend(&out, "\n  ", line);
  return out;
}

std::string LocalBackend::ChiefFailed(size_t i, const TaskEnd& end) {
  return StrCat("the chief (", plan_->tasks[i].name(), ") ", end.how,
                StderrTail(i));
}

std::string LocalBackend::NotReady(size_t i) const {
  const TaskPlan& t = plan_->tasks[i];
  return StrCat("task ", t.name(), " did not write its ready file (",
                t.ready_file, ")");
}

LocalRun::LocalRun(LocalBackend* backend, RunOptions options)
    : Run(std::unique_ptr<Backend>(backend), std::move(options)),
      local_(backend) {}

StatusOr<std::unique_ptr<LocalRun>> LocalRun::Start(PlanRequest request,
                                                    RunOptions options) {
  auto* backend = new LocalBackend(options);
  std::unique_ptr<LocalRun> run(new LocalRun(backend, std::move(options)));
  DTF_RETURN_IF_ERROR(run->Begin(std::move(request)));
  return run;
}

}  // namespace dtf::launch
