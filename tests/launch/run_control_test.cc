// Runs seen from outside: detached runs, `dtf stop`, and reconciling the
// records of a run whose supervisor died.
#include "lib/launch/run_control.h"

#include <signal.h>
#include <unistd.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/launch/local/local_backend.h"
#include "lib/launch/process.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/run_registry.h"
#include "lib/launch/run_status.h"
#include "tests/launch/launch_testing.h"
#include "tests/testing/temp_dir.h"

namespace dtf::launch {
namespace {

using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;
using namespace std::chrono_literals;

class RunControlTest : public ::testing::Test {
 protected:
  RunOptions Options() {
    RunOptions o;
    o.grace = 300ms;
    o.start_timeout = 10s;
    o.poll = 10ms;
    return o;
  }
  PlanRequest Request(const std::string& env) {
    return testing::Request(dir_, binary_,
                            "ps = 1\nworkers = 2\n[env]\n" + env);
  }
  std::string RunDir(const std::string& id) {
    return dir_.Join(".dtf/runs/" + id);
  }
  // Waits until every task of the run has written its ready file.
  bool WaitReady(const std::string& run_dir) {
    return testing::WaitFor([&] {
      StatusOr<RunRecord> r = ReadRunRecord(run_dir);
      if (!r.ok()) return false;
      for (const TaskRecord& t : r->tasks) {
        if (t.state != TaskState::kRunning) return false;
      }
      return true;
    });
  }
  void ExpectNothingLeft(const std::string& run_dir) {
    StatusOr<RunView> run = LoadRun(run_dir);
    ASSERT_TRUE(run.ok()) << run.status();
    for (size_t i = 0; i < run->plan.tasks.size(); ++i) {
      const pid_t pid = run->record.tasks[i].process.pid;
      EXPECT_TRUE(testing::WaitFor([&] { return !testing::Alive(pid); }))
          << run->plan.tasks[i].name();
      const pid_t child =
          testing::ReadPid(run->plan.tasks[i].dir + "/child.pid");
      if (child > 0) {
        EXPECT_TRUE(testing::WaitFor([&] { return !testing::Alive(child); }))
            << run->plan.tasks[i].name() << "'s child";
      }
    }
  }

  dtf::testing::TempDir dir_{"dtf_run_control_test"};
  std::string binary_ = testing::WriteStandIn(dir_);
};

TEST_F(RunControlTest, DetachedRunIsStoppedByStopRunAndStopIsIdempotent) {
  StatusOr<std::string> id =
      StartDetached(Request("STANDIN_CHIEF_SLEEP = \"60\"\n"), Options());
  ASSERT_TRUE(id.ok()) << id.status();
  const std::string run_dir = RunDir(*id);
  ASSERT_TRUE(WaitReady(run_dir));
  StatusOr<RunRecord> record = ReadRunRecord(run_dir);
  ASSERT_TRUE(record.ok());
  EXPECT_TRUE(record->detached);
  EXPECT_NE(record->supervisor.pid, ::getpid());
  EXPECT_TRUE(SupervisorRunning(*record));
  for (const TaskRecord& t : record->tasks) {
    EXPECT_TRUE(testing::Alive(t.process.pid)) << t.task;
  }

  StatusOr<StopReport> report = StopRun(run_dir, 2s);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(report->signalled,
              UnorderedElementsAre("ps:0", "worker:0", "worker:1"));
  EXPECT_TRUE(report->killed.empty());
  ExpectNothingLeft(run_dir);
  EXPECT_TRUE(testing::WaitFor([&] {
    StatusOr<RunRecord> r = ReadRunRecord(run_dir);
    return r.ok() && r->state == RunState::kStopped && !SupervisorRunning(*r);
  }));
  StatusOr<RunView> view = LoadRun(run_dir);
  ASSERT_TRUE(view.ok());
  ASSERT_EQ(view->exits.size(), 3u);
  for (const auto& [task, exit] : view->exits) {
    EXPECT_EQ(exit.state, TaskState::kStopped) << task;
  }
  EXPECT_THAT(dtf::testing::ReadFile(run_dir + "/supervisor.log"),
              HasSubstr("ps:0 killed by SIGTERM"));

  StatusOr<StopReport> again = StopRun(run_dir, 2s);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->signalled.empty());
}

TEST_F(RunControlTest, DetachedRunEndsOnItsOwnAndRecordsExitCodes) {
  StatusOr<std::string> id = StartDetached(
      Request("STANDIN_CHIEF_SLEEP = \"0.2\"\nSTANDIN_CHIEF_EXIT = \"5\"\n"),
      Options());
  ASSERT_TRUE(id.ok()) << id.status();
  const std::string run_dir = RunDir(*id);
  ASSERT_TRUE(testing::WaitFor([&] {
    StatusOr<RunRecord> r = ReadRunRecord(run_dir);
    return r.ok() && IsFinal(r->state);
  }));
  StatusOr<RunView> view = LoadRun(run_dir);
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->record.state, RunState::kFailed);
  EXPECT_EQ(view->record.exit_code, 5);
  EXPECT_EQ(view->exits.at("worker:0").exit_code, 5);
  ExpectNothingLeft(run_dir);
}

TEST_F(RunControlTest, DetachedStartFailureIsReturned) {
  StatusOr<std::string> id =
      StartDetached(testing::Request(dir_, dir_.Join("missing")), Options());
  ASSERT_FALSE(id.ok());
  EXPECT_THAT(Message(id.status()), HasSubstr("task ps:0 failed to start"));
  EXPECT_EQ(id.status().code(), StatusCode::kNotFound);
}

TEST_F(RunControlTest, TasksDieWithTheirSupervisorAndStopCleansUp) {
  StatusOr<std::string> id =
      StartDetached(Request("STANDIN_CHIEF_SLEEP = \"60\"\n"), Options());
  ASSERT_TRUE(id.ok()) << id.status();
  const std::string run_dir = RunDir(*id);
  ASSERT_TRUE(WaitReady(run_dir));
  StatusOr<RunRecord> record = ReadRunRecord(run_dir);
  ASSERT_TRUE(record.ok());
  ASSERT_EQ(::kill(record->supervisor.pid, SIGKILL), 0);
  // PR_SET_PDEATHSIG: each task gets SIGTERM when its supervisor dies.
  for (const TaskRecord& t : record->tasks) {
    EXPECT_TRUE(testing::WaitFor([&] {
      return !testing::Alive(t.process.pid);
    })) << t.task;
  }
  // What the tasks started is still in their groups: `dtf stop` ends it and
  // accounts for every task.
  StatusOr<StopReport> report = StopRun(run_dir, 1s);
  ASSERT_TRUE(report.ok()) << report.status();
  ExpectNothingLeft(run_dir);
  StatusOr<RunStatus> status = CollectRunStatus(run_dir, 500ms);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->state, RunState::kStopped);
  for (const TaskStatusRow& row : status->tasks) {
    EXPECT_FALSE(row.alive) << row.task;
    EXPECT_EQ(row.state, "stopped") << row.task;
  }
}

TEST_F(RunControlTest, ReconcileMarksTasksLostWhenNobodyRecordedThem) {
  StatusOr<std::string> id =
      StartDetached(Request("STANDIN_CHIEF_SLEEP = \"60\"\n"), Options());
  ASSERT_TRUE(id.ok()) << id.status();
  const std::string run_dir = RunDir(*id);
  ASSERT_TRUE(WaitReady(run_dir));
  StatusOr<RunRecord> record = ReadRunRecord(run_dir);
  ASSERT_TRUE(record.ok());
  // The supervisor and every task group vanish without a word.
  ASSERT_EQ(::kill(record->supervisor.pid, SIGKILL), 0);
  for (const TaskRecord& t : record->tasks) ::kill(-t.process.pid, SIGKILL);
  for (const TaskRecord& t : record->tasks) {
    ASSERT_TRUE(testing::WaitFor([&] { return !GroupAlive(t.process); }));
  }
  ASSERT_TRUE(testing::WaitFor([&] { return !SupervisorRunning(*record); }));
  StatusOr<RunStatus> status = CollectRunStatus(run_dir, 500ms);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->state, RunState::kFailed);
  EXPECT_THAT(status->message, HasSubstr("supervisor"));
  for (const TaskStatusRow& row : status->tasks) {
    EXPECT_EQ(row.state, "lost") << row.task;
  }
  StatusOr<RunView> view = LoadRun(run_dir);
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->exits.size(), 3u);
}

// A record without a start time names a pid that may be anyone's by now:
// `dtf stop` must leave it alone rather than signal whatever has that pid.
TEST_F(RunControlTest, StopLeavesATaskWithoutAStartTimeAlone) {
  StatusOr<std::string> id =
      StartDetached(Request("STANDIN_CHIEF_SLEEP = \"60\"\n"), Options());
  ASSERT_TRUE(id.ok()) << id.status();
  const std::string run_dir = RunDir(*id);
  ASSERT_TRUE(WaitReady(run_dir));
  StatusOr<RunRecord> record = ReadRunRecord(run_dir);
  ASSERT_TRUE(record.ok());
  ASSERT_EQ(::kill(record->supervisor.pid, SIGKILL), 0);
  for (const TaskRecord& t : record->tasks) ::kill(-t.process.pid, SIGKILL);
  for (const TaskRecord& t : record->tasks) {
    ASSERT_TRUE(testing::WaitFor([&] { return !GroupAlive(t.process); }));
  }
  ASSERT_TRUE(testing::WaitFor([&] { return !SupervisorRunning(*record); }));
  // Another process group now has the pid the record names.
  SpawnOptions other;
  other.argv = {"/bin/sleep", "60"};
  other.stdout_file = dir_.Join("other.out");
  other.stderr_file = dir_.Join("other.err");
  other.die_with_parent = true;
  StatusOr<ProcessId> stranger = Spawn(other);
  ASSERT_TRUE(stranger.ok()) << stranger.status();
  RunRecord edited = *record;
  ASSERT_FALSE(edited.tasks.empty());
  edited.tasks[0].process = ProcessId{stranger->pid, 0};
  edited.tasks[0].state = TaskState::kRunning;
  ASSERT_TRUE(WriteRunRecord(run_dir, edited).ok());

  StatusOr<StopReport> report = StopRun(run_dir, 300ms);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(report->unverifiable,
              ::testing::ElementsAre(edited.tasks[0].task));
  EXPECT_THAT(report->signalled,
              ::testing::Not(::testing::Contains(edited.tasks[0].task)));
  EXPECT_THAT(report->killed,
              ::testing::Not(::testing::Contains(edited.tasks[0].task)));
  EXPECT_TRUE(testing::Alive(stranger->pid));
  EXPECT_FALSE(SignalGroup(ProcessId{stranger->pid, 0}, SIGTERM));
  EXPECT_TRUE(testing::Alive(stranger->pid));
  EXPECT_TRUE(SignalGroup(*stranger, SIGKILL));
  EXPECT_TRUE(testing::WaitFor([&] { return !GroupAlive(*stranger); }));
  TryReap(stranger->pid);
}

}  // namespace
}  // namespace dtf::launch
