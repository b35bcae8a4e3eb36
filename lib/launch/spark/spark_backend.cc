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

}  // namespace

SparkBackend::SparkBackend(const RunOptions& options)
    : grace_(options.grace),
      failure_lines_(options.failure_lines),
      on_note_(options.on_note) {}

SparkBackend::~SparkBackend() = default;

StatusOr<Plan> SparkBackend::Place(PlanRequest request) {
  return PlanInClaimedRunDir(
      std::move(request), spark::SparkPlanHooks(),
      [&](PlanRequest* r) -> Status {
        DTF_RETURN_IF_ERROR(spark::FindSparkSubmit(r->profile).status());
        DTF_RETURN_IF_ERROR(
            spark::CheckMasterReachable(r->profile, kMasterTimeoutMs));
        if (spark::SparkTableOf(r->profile).ship) {
          std::string note;
          DTF_RETURN_IF_ERROR(spark::PackSparkArchives(r, &note));
          if (!note.empty() && on_note_) on_note_(note);
        }
        return OkStatus();
      });
}

void SparkBackend::Attach(const Plan* plan, BackendEvents* events) {
  plan_ = plan;
  events_ = events;
  tasks_.Attach(plan, events);
}

Status SparkBackend::Prepare(const RunTls*) {
  tasks_.ClearEarlierEnds();
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

void SparkBackend::CheckExits() {
  // The task that failed first, not one Spark stopped for it, is what ends
  // the run.
  tasks_.CheckExits(/*failures_first=*/true, [&](size_t i, const TaskEnd& end) {
    if (end.state == TaskState::kFailed && !first_failed_) first_failed_ = i;
    if (tasks_.FailsGang(i, end) && stage_failure_.ok()) {
      stage_failure_ = absl::AbortedError(ToAbsl(StrCat(
          "task ", plan_->tasks[i].name(), " ", end.how,
          "; a failed task fails Spark's barrier stage, so the run cannot go "
          "on without it; stopped the other tasks",
          StderrTail(i))));
    }
  });
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
  return QuoteLastLines(err, failure_lines_);
}

void SparkBackend::RecordMissing(bool force) {
  if (!over_) return;
  if (!force && Clock::now() - over_at_ < kExitFileLag) return;
  const std::string driver =
      submit_exit_ ? StrCat("spark-submit ", submit_exit_->Describe())
                   : std::string("spark-submit ended");
  const std::string says = DriverSays(/*or_tail=*/true);
  for (const DirTasks::Missing& m : tasks_.EndMissing()) {
    const TaskPlan& plan = plan_->tasks[m.i];
    TaskEnd end;
    end.state = m.state;
    if (submit_.pid <= 0) {
      end.how = "was not started (spark-submit did not start)";
    } else if (tasks_.ready(m.i)) {
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
    events_->Ended(m.i, std::move(end));
  }
}

Status SparkBackend::Look() {
  tasks_.CheckReady();
  tasks_.PumpOutput(false);
  CheckExits();
  if (!stage_failure_.ok()) return stage_failure_;
  CheckDriver();
  RecordMissing(false);
  return OkStatus();
}

Status SparkBackend::StopTasks(bool final) {
  Status result;
  if (submit_.pid <= 0) over_ = true;
  if (submitted_ && !over_ && tasks_.AllEnded()) {
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
      tasks_.CheckReady();
      tasks_.PumpOutput(false);
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
  if (submitted_) {
    tasks_.AwaitEnds(kExitFileLag, [&] { CheckExits(); });
  } else {
    CheckExits();
  }
  if (over_ || !submitted_ || final) {
    over_ = true;
    RecordMissing(/*force=*/true);
  }
  if (final) tasks_.PumpOutput(true);
  return result;
}

std::string SparkBackend::StderrTail(size_t i) {
  return tasks_.StderrTail(i, failure_lines_, DriverSays(/*or_tail=*/false));
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
