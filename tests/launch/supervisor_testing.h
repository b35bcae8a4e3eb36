// The supervisor's tests (lib/launch/supervisor.h) on a fake backend that
// logs what it is asked to do: the plan, the backend and the fixture.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/run_registry.h"
#include "lib/launch/supervisor.h"
#include "tests/testing/temp_dir.h"

namespace dtf::launch {

// Inside a test, Run names ::testing::Test::Run.
using LaunchRun = ::dtf::launch::Run;

// `ps` parameter servers (0: an allreduce plan) and `workers` workers.
inline Plan MakeTestPlan(const std::string& dir, int ps, int workers,
                         int max_restarts) {
  Plan p;
  p.run_id = "run1";
  p.job = dir + "/job.toml";
  p.binary = "/bin/dtf";
  p.run_dir = dir + "/runs/run1";
  p.secret_file = p.run_dir + "/" + kSecretFile;
  p.profile_name = "test";
  p.profile_source = "test.toml";
  p.ps = ps;
  p.workers = workers;
  p.host = "127.0.0.1";
  p.base_port = 20000;
  p.max_restarts = max_restarts;
  for (int k = 0; k < ps + workers; ++k) {
    TaskPlan t;
    t.role = k < ps ? Role::kPs : Role::kWorker;
    t.index = k < ps ? k : k - ps;
    t.chief = t.role == Role::kWorker && t.index == 0;
    t.host = p.host;
    t.port = 20000 + k;
    t.argv = {"/bin/dtf", "serve", "--role", std::string(RoleName(t.role))};
    t.dir = p.run_dir + "/" + TaskDirName(t.role, t.index);
    t.ready_file = t.dir + "/" + kReadyFile;
    t.stdout_file = t.dir + "/" + kStdoutFile;
    t.stderr_file = t.dir + "/" + kStderrFile;
    t.exit_file = t.dir + "/" + kExitFile;
    p.tasks.push_back(std::move(t));
  }
  return p;
}

// A backend that starts nothing: it logs what it is asked to do, in order,
// and tells the supervisor of the ready files and exits a test scripts.
class FakeBackend final : public Backend {
 public:
  explicit FakeBackend(Plan plan) : planned_(std::move(plan)) {}

  // Scripted for the next look.
  void MakeReady(const std::string& task) { ready_.push_back(Index(task)); }
  void Exit(const std::string& task, int code) {
    exits_.emplace_back(Index(task), code);
  }

  // Whether `dtf stop` leaves stopping the tasks to the run (as over SSH).
  bool stops_on_request = false;
  // What the supervisor asked for, in order.
  std::vector<std::string> calls;
  // The command lines the tasks were started (again) with, by task.
  std::map<std::string, std::vector<std::string>> argv;

  BackendKind kind() const override { return BackendKind::kLocal; }
  StatusOr<Plan> Place(PlanRequest) override {
    calls.push_back("place");
    std::filesystem::create_directories(planned_.run_dir);
    return planned_;
  }
  void Attach(const Plan* plan, BackendEvents* events) override {
    plan_ = plan;
    events_ = events;
    running_.assign(plan->tasks.size(), false);
  }
  Status Prepare(const RunTls*) override {
    calls.push_back("prepare");
    return OkStatus();
  }
  std::vector<StatusOr<ProcessId>> StartTasks(Role role) override {
    std::vector<StatusOr<ProcessId>> ids(plan_->tasks.size(),
                                         CancelledError("not tried"));
    for (size_t i = 0; i < plan_->tasks.size(); ++i) {
      const TaskPlan& t = plan_->tasks[i];
      if (t.role != role || plan_->Reserved(t)) continue;
      calls.push_back(StrCat("start ", t.name()));
      argv[t.name()] = t.argv;
      running_[i] = true;
      ids[i] = ProcessId{static_cast<pid_t>(1000 + i), 1};
    }
    return ids;
  }
  StatusOr<ProcessId> StartReserved(size_t i) override {
    const TaskPlan& t = plan_->tasks[i];
    calls.push_back(StrCat("start reserved ", t.name()));
    argv[t.name()] = t.argv;
    running_[i] = true;
    return ProcessId{static_cast<pid_t>(3000 + i), 1};
  }
  StatusOr<ProcessId> StartAgain(size_t i, bool all) override {
    const TaskPlan& t = plan_->tasks[i];
    calls.push_back(StrCat("start again ", t.name(), all ? " (all)" : ""));
    argv[t.name()] = RestartArgv(t);
    running_[i] = true;
    return ProcessId{static_cast<pid_t>(2000 + i), 1};
  }
  Status Tend() override { return OkStatus(); }
  Status Look() override {
    for (size_t i : ready_) events_->Ready(i, plan_->tasks[i].address());
    ready_.clear();
    const std::vector<std::pair<size_t, int>> exits = std::move(exits_);
    exits_.clear();
    for (const auto& [i, code] : exits) End(i, code, 0);
    return OkStatus();
  }
  std::chrono::milliseconds LookEvery() const override {
    return std::chrono::milliseconds(0);
  }
  bool Reachable(size_t) const override { return true; }
  bool StopsOnRequest() const override { return stops_on_request; }
  Status StopTasks(bool final) override {
    // Workers first, then parameter servers, as every backend does.
    for (Role role : {Role::kWorker, Role::kPs}) {
      for (size_t i = 0; i < plan_->tasks.size(); ++i) {
        if (!running_[i] || plan_->tasks[i].role != role) continue;
        calls.push_back(StrCat("stop ", plan_->tasks[i].name()));
        End(i, -1, 15);
      }
    }
    calls.push_back(final ? "stopped (final)" : "stopped");
    return OkStatus();
  }
  std::string StderrTail(size_t i) override {
    return StrCat("; the last lines of ", plan_->tasks[i].name(),
                  "'s stderr:\n  boom");
  }
  std::string ChiefFailed(size_t i, const TaskEnd& end) override {
    return StrCat("the chief (", plan_->tasks[i].name(), ") ", end.how,
                  StderrTail(i));
  }
  std::string NotReady(size_t i) const override {
    return StrCat("task ", plan_->tasks[i].name(),
                  " did not write its ready file");
  }
  void FetchMetrics() override { calls.push_back("fetch metrics"); }

 private:
  size_t Index(const std::string& task) const {
    for (size_t i = 0; i < plan_->tasks.size(); ++i) {
      if (plan_->tasks[i].name() == task) return i;
    }
    ADD_FAILURE() << "no task " << task;
    return 0;
  }
  // Task i exited with `code`, or was killed by `signal`.
  void End(size_t i, int code, int signal) {
    running_[i] = false;
    TaskEnd end;
    end.signal = signal;
    end.exit_code = signal != 0 ? 128 + signal : code;
    end.state = code == 0 && signal == 0  ? TaskState::kExited
                : events_->EndsAreStops() ? TaskState::kStopped
                                          : TaskState::kFailed;
    end.how = signal != 0 ? StrCat("killed by signal ", signal)
                          : StrCat("exited with status ", code);
    end.how_brief = end.how;
    end.restart_how = end.how;
    events_->Ended(i, std::move(end));
  }

  Plan planned_;
  const Plan* plan_ = nullptr;
  BackendEvents* events_ = nullptr;
  std::vector<bool> running_;
  std::vector<size_t> ready_;
  std::vector<std::pair<size_t, int>> exits_;
};

class SupervisorTest : public ::testing::Test {
 protected:
  // A run of a fake backend with `ps` parameter servers and `workers`
  // workers, every task started.
  // `launch_workers` > 0: the workers from that one on are reserved slots
  // (max_workers), not started.
  std::unique_ptr<LaunchRun> Start(int ps, int workers, int max_restarts = 0,
                                   int min_workers = 0,
                                   int launch_workers = 0) {
    Plan plan = MakeTestPlan(dir_.path(), ps, workers, max_restarts);
    plan.min_workers = min_workers;
    plan.launch_workers = launch_workers;
    auto backend = std::make_unique<FakeBackend>(std::move(plan));
    fake_ = backend.get();
    options_.on_note = [this](std::string_view note) {
      notes_.emplace_back(note);
    };
    StatusOr<std::unique_ptr<LaunchRun>> run =
        LaunchRun::Start(std::move(backend), PlanRequest{}, options_);
    EXPECT_TRUE(run.ok()) << run.status();
    return run.ok() ? *std::move(run) : nullptr;
  }
  void AllReady(const LaunchRun& run) {
    for (const TaskPlan& t : run.plan().tasks) fake_->MakeReady(t.name());
  }
  RunRecord Record(const LaunchRun& run) {
    StatusOr<RunRecord> record = ReadRunRecord(run.plan().run_dir);
    EXPECT_TRUE(record.ok()) << record.status();
    return record.ok() ? *record : RunRecord{};
  }
  std::string State(const LaunchRun& run, const std::string& task) {
    for (const TaskRecord& t : Record(run).tasks) {
      if (t.task == task) return std::string(TaskStateName(t.state));
    }
    return "(no task " + task + ")";
  }
  // The backend's calls from the n-th on.
  std::vector<std::string> CallsFrom(size_t n) const {
    return std::vector<std::string>(fake_->calls.begin() + long(n),
                                    fake_->calls.end());
  }
  // What `dtf stop` leaves in the run directory.
  void WriteStopFile(const LaunchRun& run) {
    ASSERT_TRUE(
        WriteFileAtomically(run.plan().run_dir + "/" + kStopFile, "{}").ok());
  }
  bool Noted(std::string_view text) const {
    for (const std::string& n : notes_) {
      if (n.find(text) != std::string::npos) return true;
    }
    return false;
  }

  testing::TempDir dir_;
  RunOptions options_;
  FakeBackend* fake_ = nullptr;
  std::vector<std::string> notes_;
};

}  // namespace dtf::launch
