#include "lib/launch/run_control.h"

#include <unistd.h>

#include <filesystem>
#include <thread>

#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/launch/backend.h"
#include "lib/launch/plan_hooks.h"
#include "lib/launch/process.h"
#include "lib/launch/run_layout.h"

namespace dtf::launch {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

bool StopMarked(const std::string& run_dir) {
  std::error_code ec;
  return fs::exists(fs::path(run_dir) / kStopFile, ec);
}

}  // namespace

bool SupervisorRunning(const RunRecord& record) {
  // This process is never its own runs' outside observer.
  if (record.supervisor.pid == ::getpid()) return true;
  return ProcessRunning(record.supervisor);
}

bool AnyTaskAlive(const RunView& run) {
  if (!run.plan.hooks().TasksHere()) {
    // Tasks on other hosts: alive until their exit.json says otherwise.
    for (const TaskRecord& t : run.record.tasks) {
      if (TaskStarted(run, t) && run.exits.count(t.task) == 0 &&
          !IsFinal(t.state)) {
        return true;
      }
    }
    return false;
  }
  for (const TaskRecord& t : run.record.tasks) {
    if (t.process.pid > 0 && GroupAlive(t.process)) return true;
  }
  return false;
}

Status ReconcileRun(RunView* run) {
  if (IsFinal(run->record.state) || SupervisorRunning(run->record)) {
    return OkStatus();
  }
  const bool stopped = StopMarked(run->dir);
  const bool remote = !run->plan.hooks().TasksHere();
  if (remote) {
    // The exits are recorded where the tasks ran.
    DTF_ASSIGN_OR_RETURN(std::unique_ptr<RunSource> source,
                         OpenRunSource(run->plan));
    source->FetchExits(run);
  }
  bool all_final = true;
  for (size_t i = 0; i < run->record.tasks.size(); ++i) {
    TaskRecord& t = run->record.tasks[i];
    if (auto it = run->exits.find(t.task); it != run->exits.end()) {
      t.state = it->second.state;
      continue;
    }
    if (t.state == TaskState::kReserved) continue;  // never started
    if (TaskStarted(*run, t) && (remote || GroupAlive(t.process))) {
      all_final = false;
      continue;
    }
    ExitRecord e;
    e.task = t.task;
    e.state = stopped ? TaskState::kStopped : TaskState::kLost;
    e.finished_ms = NowMs();
    if (i < run->plan.tasks.size()) {
      DTF_RETURN_IF_ERROR(WriteExitRecord(run->plan.tasks[i].exit_file, e));
    }
    t.state = e.state;
    run->exits[t.task] = e;
  }
  if (all_final) {
    RunRecord& r = run->record;
    const std::string chief = run->plan.chief().name();
    auto it = run->exits.find(chief);
    if (stopped) {
      r.state = RunState::kStopped;
      r.message = StrCat("run ", r.run_id, " was stopped (dtf stop)");
    } else if (it != run->exits.end() && it->second.exit_code == 0) {
      r.state = RunState::kSucceeded;
    } else {
      r.state = RunState::kFailed;
      r.message = StrCat("the run's supervisor (pid ", r.supervisor.pid,
                         ") went away; its tasks are gone");
    }
    if (it != run->exits.end()) r.exit_code = it->second.exit_code;
    r.ended_ms = NowMs();
  }
  return WriteRunRecord(run->dir, run->record);
}

namespace {

Status MarkStopped(const std::string& run_dir) {
  return WriteFileAtomically((fs::path(run_dir) / kStopFile).string(),
                             StrCat("{\n  \"requested_ms\": ", NowMs(),
                                    ",\n  \"pid\": ", ::getpid(), "\n}\n"));
}

// An SSH run: its launcher stops the tasks when it sees stop.json; without
// a launcher, the tasks are stopped on their hosts from here.
StatusOr<StopReport> StopRemoteRun(RunView run,
                                   std::chrono::milliseconds grace) {
  StopReport report;
  if (IsFinal(run.record.state)) return report;
  for (const TaskRecord& t : run.record.tasks) {
    if (TaskStarted(run, t) && !IsFinal(t.state) &&
        run.exits.count(t.task) == 0) {
      report.signalled.push_back(t.task);
    }
  }
  if (!StopMarked(run.dir)) DTF_RETURN_IF_ERROR(MarkStopped(run.dir));
  if (SupervisorRunning(run.record)) {
    const auto deadline = Clock::now() + grace + std::chrono::seconds(15);
    while (SupervisorRunning(run.record) && Clock::now() < deadline) {
      StatusOr<RunRecord> record = ReadRunRecord(run.dir);
      if (record.ok() && IsFinal(record->state)) return report;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<RunSource> source,
                       OpenRunSource(run.plan));
  DTF_ASSIGN_OR_RETURN(const TaskStopReport stopped,
                       source->StopTasks(run, grace));
  report.killed = stopped.killed;
  DTF_ASSIGN_OR_RETURN(run, LoadRun(run.dir));
  DTF_RETURN_IF_ERROR(ReconcileRun(&run));
  return report;
}

}  // namespace

StatusOr<StopReport> StopRun(const std::string& run_dir,
                             std::chrono::milliseconds grace) {
  DTF_ASSIGN_OR_RETURN(RunView run, LoadRun(run_dir));
  if (!run.plan.hooks().TasksHere())
    return StopRemoteRun(std::move(run), grace);
  StopReport report;
  for (const TaskRecord& t : run.record.tasks) {
    if (t.process.pid <= 0) continue;
    if (t.process.start_ticks == 0) {
      report.unverifiable.push_back(t.task);
      continue;
    }
    if (GroupAlive(t.process)) report.signalled.push_back(t.task);
  }
  if (!StopMarked(run_dir) && !report.signalled.empty()) {
    DTF_RETURN_IF_ERROR(MarkStopped(run_dir));
  }
  // The tasks are this machine's processes: stopped from here.
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<RunSource> source,
                       OpenRunSource(run.plan));
  DTF_ASSIGN_OR_RETURN(const TaskStopReport stopped,
                       source->StopTasks(run, grace));
  report.killed = stopped.killed;
  // The supervisor records the exits of its children; give it a moment.
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (run.record.supervisor.pid != ::getpid() &&
         SupervisorRunning(run.record) && Clock::now() < deadline) {
    StatusOr<RunRecord> record = ReadRunRecord(run_dir);
    if (record.ok() && IsFinal(record->state)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  DTF_ASSIGN_OR_RETURN(run, LoadRun(run_dir));
  DTF_RETURN_IF_ERROR(ReconcileRun(&run));
  return report;
}

}  // namespace dtf::launch
