#include "lib/launch/spark/spark_backend.h"

#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/launch/log_tail.h"
#include "lib/launch/run_id.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/spark/spark_driver.h"
#include "lib/launch/spark/spark_plan.h"
#include "lib/launch/spark/spark_preflight.h"
#include "lib/launch/task_files.h"

namespace dtf::launch {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Files a task writes on shared storage may show up here a moment after
// the driver is gone.
constexpr std::chrono::seconds kExitFileLag(5);
// How long the master may take to accept a connection.
constexpr int kMasterTimeoutMs = 5000;

std::string HostOfAddress(const std::string& address) {
  const size_t colon = address.rfind(':');
  return colon == std::string::npos ? address : address.substr(0, colon);
}

}  // namespace

SparkBackend::SparkBackend(const RunOptions& options)
    : grace_(options.grace),
      failure_lines_(options.failure_lines),
      on_note_(options.on_note) {}

SparkBackend::~SparkBackend() = default;

StatusOr<Plan> SparkBackend::Place(PlanRequest request) {
  const std::string wanted_id = request.run_id;
  request.run_id = kUnchosenRunId;
  request.ports.clear();
  DTF_ASSIGN_OR_RETURN(Plan draft,
                       MakePlanWith(request, spark::SparkPlanHooks()));
  DTF_RETURN_IF_ERROR(spark::FindSparkSubmit(request.profile).status());
  DTF_RETURN_IF_ERROR(
      spark::CheckMasterReachable(request.profile, kMasterTimeoutMs));
  if (spark::SparkTableOf(request.profile).ship) {
    std::string note;
    DTF_RETURN_IF_ERROR(spark::PackSparkArchives(&request, &note));
    if (!note.empty() && on_note_) on_note_(note);
  }
  const std::string runs_dir = fs::path(draft.run_dir).parent_path().string();
  DTF_ASSIGN_OR_RETURN(request.run_id,
                       ClaimRunDir(runs_dir, wanted_id, request.resume));
  return MakePlanWith(request, spark::SparkPlanHooks());
}

void SparkBackend::Attach(const Plan* plan, BackendEvents* events) {
  plan_ = plan;
  events_ = events;
  tasks_.resize(plan->tasks.size());
  tails_ = OpenTaskTails(*plan);
}

Status SparkBackend::Prepare(const RunTls*) {
  // A resumed run's earlier ends are not this attempt's.
  for (const TaskPlan& t : plan_->tasks) {
    std::error_code ec;
    fs::remove(t.ready_file, ec);
    fs::remove(t.exit_file, ec);
  }
  const std::string driver =
      (fs::path(plan_->run_dir) / spark::kDriverFile).string();
  DTF_RETURN_IF_ERROR(
      WriteFileAtomically(driver, spark::SparkPartOf(*plan_).driver));
  if (::chmod(driver.c_str(), 0600) != 0) return ErrnoToStatus(errno, driver);
  return OkStatus();
}

std::vector<StatusOr<ProcessId>> SparkBackend::StartTasks(Role role) {
  std::vector<StatusOr<ProcessId>> ids(plan_->tasks.size(),
                                       CancelledError("not tried"));
  bool any = false;
  for (const TaskPlan& t : plan_->tasks) any = any || t.role == role;
  if (!any) return ids;
  if (!submitted_) {
    submitted_ = true;
    const spark::SparkPlanPart& part = spark::SparkPartOf(*plan_);
    SpawnOptions spawn;
    spawn.argv = part.submit;
    Status s;
    if (StatusOr<std::string> found = spark::FindSparkSubmit([&] {
          Profile p;
          spark::MutableSparkTable(&p) = part.profile;
          return p;
        }());
        found.ok()) {
      spawn.argv[0] = *found;
    } else {
      s = found.status();
    }
    spawn.stdout_file =
        (fs::path(plan_->run_dir) / spark::kSubmitStdout).string();
    spawn.stderr_file =
        (fs::path(plan_->run_dir) / spark::kSubmitStderr).string();
    if (s.ok()) {
      StatusOr<ProcessId> id = Spawn(spawn);
      if (id.ok()) {
        submit_ = *id;
        events_->Note(StrCat("submitted the Spark application to ",
                             part.profile.master, " (spark-submit pid ",
                             submit_.pid, ", its output in ", spawn.stderr_file,
                             ")"));
      } else {
        s = id.status();
      }
    }
    if (!s.ok()) {
      for (size_t i = 0; i < ids.size(); ++i) {
        if (plan_->tasks[i].role == role) {
          ids[i] = s;
          break;
        }
      }
      return ids;
    }
  }
  for (size_t i = 0; i < plan_->tasks.size(); ++i) {
    if (plan_->tasks[i].role == role) ids[i] = ProcessId{};
  }
  return ids;
}

StatusOr<ProcessId> SparkBackend::StartAgain(size_t i, bool) {
  return FailedPreconditionError(
      StrCat("task ", plan_->tasks[i].name(),
             " cannot be started again alone on Spark (a failed task fails "
             "the barrier stage)"));
}

void SparkBackend::PumpOutput(bool flush) {
  if (!events_->WantsOutput()) return;
  PollTaskTails(tails_, *events_, flush);
}

void SparkBackend::CheckReady() {
  for (size_t i = 0; i < tasks_.size(); ++i) {
    Task& t = tasks_[i];
    if (t.ready || t.ended) continue;
    std::optional<std::string> address =
        ReadReadyAddress(plan_->tasks[i].ready_file);
    if (!address) continue;
    t.ready = true;
    // A batch task's ready file says which shard it is, not where it runs.
    if (!plan_->batch) t.host = HostOfAddress(*address);
    events_->Ready(i, *address);
  }
}

void SparkBackend::CheckExits() {
  const size_t chief = static_cast<size_t>(plan_->ps);
  std::vector<std::pair<size_t, ExitRecord>> found;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    if (tasks_[i].ended) continue;
    StatusOr<std::optional<ExitRecord>> rec =
        ReadExitRecord(plan_->tasks[i].exit_file);
    if (rec.ok() && *rec) found.emplace_back(i, **rec);
  }
  // The task that failed first, not one Spark stopped for it, is what ends
  // the run: failures are told first.
  std::stable_partition(found.begin(), found.end(), [](const auto& f) {
    return f.second.state == TaskState::kFailed;
  });
  for (auto& [i, e] : found) {
    Task& t = tasks_[i];
    const TaskPlan& plan = plan_->tasks[i];
    t.ended = true;
    if (t.host.empty()) {
      StatusOr<std::string> node =
          ReadFileToString(StrCat(plan.dir, "/", kNodeFile));
      if (node.ok()) t.host = std::string(absl::StripAsciiWhitespace(*node));
    }
    ExitInfo info;
    info.code = e.exit_code.value_or(-1);
    info.signal = e.signal;
    if (e.state == TaskState::kFailed && events_->EndsAreStops()) {
      e.state = TaskState::kStopped;
      (void)WriteExitRecord(plan.exit_file, e);
    }
    if (e.state == TaskState::kFailed && !first_failed_) first_failed_ = i;
    const std::string on =
        t.host.empty() ? std::string() : StrCat(" on ", t.host);
    TaskEnd end;
    end.state = e.state;
    end.exit_code = info.ShellCode();
    end.signal = e.signal;
    end.how = StrCat(info.Describe(), on);
    end.how_brief = end.how;
    end.restart_how = end.how;
    events_->Note(StrCat(plan.name(), " ", end.how));
    const bool ends_stage = !plan_->batch && e.state == TaskState::kFailed &&
                            plan.role == Role::kWorker && !plan.chief &&
                            !tasks_[chief].ended && stage_failure_.ok();
    if (ends_stage) {
      stage_failure_ = absl::AbortedError(ToAbsl(StrCat(
          "task ", plan.name(), " ", end.how,
          "; a failed task fails Spark's barrier stage, so the run cannot go "
          "on without it; stopped the other tasks",
          StderrTail(i))));
    }
    events_->Ended(i, std::move(end));
  }
}

void SparkBackend::CheckDriver() {
  if (over_) return;
  if (submit_.pid > 0 && !submit_exit_) submit_exit_ = TryReap(submit_.pid);
  if (app_.empty() && submit_.pid > 0) {
    const std::string mark = "application ";
    for (const std::string& what : DriverLines()) {
      if (!what.starts_with(mark)) continue;
      app_ = what.substr(mark.size());
      app_ = app_.substr(0, app_.find(' '));
      events_->Note(StrCat("Spark application ", app_));
      break;
    }
  }
  if (submit_exit_ || submit_.pid <= 0) {
    over_ = true;
    over_at_ = Clock::now();
  }
}

std::vector<std::string> SparkBackend::DriverLines() const {
  // PySpark hands the driver's stderr to spark-submit's stdout.
  std::vector<std::string> out;
  for (const char* name : {spark::kSubmitStdout, spark::kSubmitStderr}) {
    const std::string file = (fs::path(plan_->run_dir) / name).string();
    for (const std::string& line : LastLines(file, 400)) {
      if (line.starts_with(spark::kDriverPrefix)) {
        out.push_back(
            line.substr(std::string_view(spark::kDriverPrefix).size()));
      }
    }
  }
  return out;
}

std::string SparkBackend::DriverSays(bool or_tail) const {
  std::string out;
  for (const std::string& what : DriverLines()) {
    if (what.starts_with("too few") ||
        what.starts_with("the barrier stage failed")) {
      StrAppend(&out, "; the driver: ", what);
    }
  }
  if (!out.empty() || !or_tail) return out;
  const std::string err =
      (fs::path(plan_->run_dir) / spark::kSubmitStderr).string();
  std::vector<std::string> lines = LastLines(err, failure_lines_);
  if (lines.empty()) return "";
  out = StrCat("; the last lines of ", err, ":");
  for (const std::string& line : lines) StrAppend(&out, "\n  ", line);
  return out;
}

void SparkBackend::RecordMissing(bool force) {
  if (!over_) return;
  if (!force && Clock::now() - over_at_ < kExitFileLag) return;
  const std::string driver =
      submit_exit_ ? StrCat("spark-submit ", submit_exit_->Describe())
                   : std::string("spark-submit ended");
  const std::string says = DriverSays(/*or_tail=*/true);
  for (size_t i = 0; i < tasks_.size(); ++i) {
    Task& t = tasks_[i];
    if (t.ended) continue;
    const TaskPlan& plan = plan_->tasks[i];
    t.ended = true;
    ExitRecord e;
    e.task = plan.name();
    e.state = events_->EndsAreStops() ? TaskState::kStopped : TaskState::kLost;
    e.finished_ms = NowMs();
    Status s = WriteExitRecord(plan.exit_file, e);
    if (!s.ok()) events_->Note(StrCat("warning: ", Message(s)));
    TaskEnd end;
    end.state = e.state;
    if (submit_.pid <= 0) {
      end.how = "was not started (spark-submit did not start)";
    } else if (t.ready) {
      end.how = StrCat("left no exit record (", plan.exit_file, ") when ",
                       driver, says);
    } else {
      end.how = StrCat("did not start: no exit record (", plan.exit_file,
                       "), and ", driver, says);
    }
    end.how_brief = end.how;
    end.restart_how = end.how;
    end.quote_signalled = true;
    events_->Note(StrCat(plan.name(), " ", end.how));
    events_->Ended(i, std::move(end));
  }
}

Status SparkBackend::Look() {
  CheckReady();
  PumpOutput(false);
  CheckExits();
  if (!stage_failure_.ok()) return stage_failure_;
  CheckDriver();
  RecordMissing(false);
  return OkStatus();
}

Status SparkBackend::StopTasks(bool final) {
  Status result;
  if (submit_.pid <= 0) over_ = true;
  bool all_ended = true;
  for (const Task& t : tasks_) all_ended = all_ended && t.ended;
  if (submitted_ && !over_ && all_ended) {
    // Every task has exited: the driver ends on its own.
    const auto until = Clock::now() + std::chrono::seconds(20);
    while (!over_ && Clock::now() < until) {
      CheckDriver();
      if (!over_) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  if (submitted_ && !over_) {
    // The driver's JVM stops the SparkContext as it goes, which kills the
    // executors' tasks; each task stops its dtf serve.
    SignalGroup(submit_, SIGTERM);
    const auto deadline = Clock::now() + grace_ + std::chrono::seconds(20);
    bool killed = false;
    while (true) {
      CheckReady();
      PumpOutput(false);
      CheckExits();
      CheckDriver();
      if (over_) break;
      if (!killed && Clock::now() > deadline - std::chrono::seconds(20)) {
        killed = true;
        SignalGroup(submit_, SIGKILL);
      }
      if (Clock::now() > deadline) {
        result = DeadlineExceededError(
            StrCat("spark-submit (pid ", submit_.pid, ") did not end"));
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  const auto lag = Clock::now() + kExitFileLag;
  while (Clock::now() < lag) {
    CheckExits();
    bool all = true;
    for (const Task& t : tasks_) all = all && t.ended;
    if (all || !submitted_) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (over_ || !submitted_ || final) {
    over_ = true;
    RecordMissing(/*force=*/true);
  }
  if (final) PumpOutput(true);
  return result;
}

std::string SparkBackend::StderrTail(size_t i) {
  const TaskPlan& t = plan_->tasks[i];
  std::vector<std::string> lines = LastLines(t.stderr_file, failure_lines_);
  if (lines.empty()) {
    return StrCat(" (its stderr, ", t.stderr_file, ", is empty)",
                  DriverSays(/*or_tail=*/false));
  }
  std::string out = StrCat("; the last lines of ", t.stderr_file, ":");
  for (const std::string& line : lines) StrAppend(&out, "\n  ", line);
  return out;
}

std::string SparkBackend::ChiefFailed(size_t i, const TaskEnd& end) {
  if (first_failed_ && *first_failed_ != i) {
    const size_t f = *first_failed_;
    return StrCat("task ", plan_->tasks[f].name(),
                  " failed and Spark failed the barrier stage; the chief (",
                  plan_->tasks[i].name(), ") ", end.how, StderrTail(f));
  }
  return StrCat("the chief (", plan_->tasks[i].name(), ") ", end.how,
                StderrTail(i));
}

std::string SparkBackend::NotReady(size_t i) const {
  const TaskPlan& t = plan_->tasks[i];
  return StrCat("task ", t.name(), " did not write its ready file (",
                t.ready_file, "; Spark application ",
                app_.empty() ? std::string("not seen yet") : app_, ")",
                DriverSays(/*or_tail=*/true));
}

std::map<std::string, std::string> SparkBackend::RecordFields() const {
  if (submit_.pid <= 0) return {};
  std::map<std::string, std::string> out = {
      {kSparkSubmitPidKey, std::to_string(submit_.pid)},
      {kSparkSubmitStartKey, std::to_string(submit_.start_ticks)}};
  if (!app_.empty()) out[kSparkAppKey] = app_;
  return out;
}

StatusOr<std::unique_ptr<Run>> StartSparkRun(PlanRequest request,
                                             RunOptions options) {
  auto backend = std::make_unique<SparkBackend>(options);
  return Run::Start(std::move(backend), std::move(request), std::move(options));
}

}  // namespace dtf::launch
