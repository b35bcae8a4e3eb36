// What `dtf status`, `logs` and `stop` need of a Spark run's tasks: their
// files are on storage this machine shares with the executors; the
// application ends with its driver, the spark-submit tasks.json records.
#include <signal.h>

#include <charconv>
#include <filesystem>
#include <string>
#include <thread>
#include <utility>

#include "lib/base/strings.h"
#include "lib/launch/log_tail.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/spark/spark_backend.h"
#include "lib/launch/task_files.h"

namespace dtf::launch {
namespace {

namespace fs = std::filesystem;

// The driver's spark-submit as tasks.json records it; pid 0 before one.
ProcessId DriverOf(const RunRecord& record) {
  ProcessId id;
  const auto pid = record.backend.find(kSparkSubmitPidKey);
  const auto start = record.backend.find(kSparkSubmitStartKey);
  if (pid == record.backend.end() || start == record.backend.end()) return id;
  std::from_chars(pid->second.data(), pid->second.data() + pid->second.size(),
                  id.pid);
  std::from_chars(start->second.data(),
                  start->second.data() + start->second.size(), id.start_ticks);
  return id;
}

class SparkRunSource final : public RunSource {
 public:
  explicit SparkRunSource(const Plan& plan) : plan_(plan) {}

  // The exit.json files are on shared storage already; a task without one
  // once the driver is gone is recorded stopped (after `dtf stop`) or lost.
  void FetchExits(RunView* run) override {
    const ProcessId driver = DriverOf(run->record);
    if (driver.pid > 0 && GroupAlive(driver)) return;
    std::error_code ec;
    const bool stopped = fs::exists(fs::path(run->dir) / kStopFile, ec);
    for (const TaskPlan& t : plan_.tasks) {
      if (run->exits.count(t.name()) > 0) continue;
      ExitRecord e;
      e.task = t.name();
      e.state = stopped ? TaskState::kStopped : TaskState::kLost;
      e.finished_ms = NowMs();
      if (WriteExitRecord(t.exit_file, e).ok()) run->exits[t.name()] = e;
    }
  }

  StatusOr<TaskStopReport> StopTasks(const RunView& run,
                                     std::chrono::milliseconds grace) override {
    TaskStopReport report;
    const ProcessId driver = DriverOf(run.record);
    if (driver.pid <= 0 || !GroupAlive(driver)) return report;
    for (const TaskRecord& t : run.record.tasks) {
      if (run.exits.count(t.task) == 0) report.signalled.push_back(t.task);
    }
    SignalGroup(driver, SIGTERM);
    const auto deadline =
        std::chrono::steady_clock::now() + grace + std::chrono::seconds(20);
    while (GroupAlive(driver) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (GroupAlive(driver)) {
      SignalGroup(driver, SIGKILL);
      report.killed = report.signalled;
    }
    return report;
  }

  StatusOr<std::unique_ptr<LineTail>> Follow(const TaskPlan&,
                                             const std::string& path) override {
    return std::make_unique<LineTail>(path);
  }

  StatusOr<ChiefRoute> RouteToChief() override {
    std::optional<std::string> address =
        ReadReadyAddress(plan_.chief().ready_file);
    if (!address) {
      return UnavailableError(StrCat("the chief of run ", plan_.run_id,
                                     " has not written its ready file (",
                                     plan_.chief().ready_file, ")"));
    }
    return ChiefRoute{*address, "its Spark executor"};
  }

 private:
  const Plan& plan_;
};

}  // namespace

std::unique_ptr<RunSource> OpenSparkRunSource(const Plan& plan) {
  return std::make_unique<SparkRunSource>(plan);
}

}  // namespace dtf::launch
