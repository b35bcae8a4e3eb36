#include "lib/launch/supervisor.h"

#include <atomic>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/run_registry.h"
#include "tests/launch/supervisor_testing.h"
#include "tests/testing/temp_dir.h"

namespace dtf::launch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST_F(SupervisorTest, TheChiefsExitEndsTheRunWithItsExitCode) {
  std::unique_ptr<LaunchRun> run = Start(1, 2);
  ASSERT_NE(run, nullptr);
  EXPECT_THAT(fake_->calls, ElementsAre("place", "prepare", "start ps:0",
                                        "start worker:0", "start worker:1"));
  EXPECT_EQ(Record(*run).state, RunState::kRunning);
  AllReady(*run);
  EXPECT_FALSE(run->Poll());
  EXPECT_TRUE(run->ready(1));
  EXPECT_EQ(State(*run, "worker:0"), "running");

  // The others get `grace` to follow the chief on their own.
  fake_->Exit("worker:0", 0);
  EXPECT_FALSE(run->Poll());
  fake_->Exit("worker:1", 0);
  fake_->Exit("ps:0", 0);
  EXPECT_TRUE(run->Poll());
  const RunOutcome o = run->outcome();
  EXPECT_TRUE(o.status.ok()) << o.status;
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_EQ(o.state, RunState::kSucceeded);
  EXPECT_EQ(Record(*run).state, RunState::kSucceeded);
  EXPECT_EQ(Record(*run).exit_code, 0);
  EXPECT_EQ(State(*run, "ps:0"), "exited");
  // Nothing was left to stop.
  EXPECT_THAT(fake_->calls, ElementsAre("place", "prepare", "start ps:0",
                                        "start worker:0", "start worker:1",
                                        "stopped (final)", "fetch metrics"));
  EXPECT_FALSE(Noted("stopping every task"));
}

TEST_F(SupervisorTest, TheChiefFailingFailsTheRunWithItsCodeAndStopsTheRest) {
  options_.grace = std::chrono::milliseconds(0);
  std::unique_ptr<LaunchRun> run = Start(1, 2);
  ASSERT_NE(run, nullptr);
  AllReady(*run);
  EXPECT_FALSE(run->Poll());
  fake_->Exit("worker:0", 3);
  // grace 0: the others are stopped at once.
  EXPECT_TRUE(run->Poll());
  const RunOutcome o = run->outcome();
  EXPECT_EQ(o.status.code(), StatusCode::kAborted);
  EXPECT_EQ(Message(o.status),
            "the chief (worker:0) exited with status 3; the last lines of "
            "worker:0's stderr:\n  boom");
  EXPECT_EQ(o.exit_code, 3);
  EXPECT_EQ(o.state, RunState::kFailed);
  EXPECT_TRUE(
      Noted("the chief exited 0 s ago; stopping the tasks still "
            "running"));
  EXPECT_THAT(CallsFrom(5), ElementsAre("stop worker:1", "stop ps:0",
                                        "stopped (final)", "fetch metrics"));
  EXPECT_EQ(State(*run, "worker:1"), "stopped");
}

TEST_F(SupervisorTest, AParameterServerFailingWithRestartsLeftIsRestarted) {
  std::unique_ptr<LaunchRun> run = Start(1, 2, /*max_restarts=*/1);
  ASSERT_NE(run, nullptr);
  AllReady(*run);
  EXPECT_FALSE(run->Poll());
  fake_->Exit("ps:0", 1);
  EXPECT_FALSE(run->Poll());
  EXPECT_EQ(fake_->calls.back(), "start again ps:0");
  EXPECT_THAT(fake_->argv["ps:0"],
              ElementsAre("/bin/dtf", "serve", "--role", "ps", "--restore"));
  EXPECT_TRUE(
      Noted("ps:0 exited with status 1; starting it again (1 of 1 "
            "restarts); the last lines of ps:0's stderr:\n  boom"));
  EXPECT_FALSE(run->ready(0));
  const RunRecord record = Record(*run);
  EXPECT_EQ(record.tasks[0].restarts, 1);
  EXPECT_EQ(record.tasks[0].state, TaskState::kStarting);
  EXPECT_EQ(record.tasks[0].process.pid, 2000);

  fake_->MakeReady("ps:0");
  fake_->Exit("worker:0", 0);
  fake_->Exit("worker:1", 0);
  fake_->Exit("ps:0", 0);
  EXPECT_TRUE(run->Poll());
  EXPECT_TRUE(run->outcome().status.ok()) << run->outcome().status;
  EXPECT_EQ(run->outcome().exit_code, 0);
}

TEST_F(SupervisorTest, PastMaxRestartsAParameterServerFailsTheRun) {
  std::unique_ptr<LaunchRun> run = Start(1, 2, /*max_restarts=*/1);
  ASSERT_NE(run, nullptr);
  AllReady(*run);
  EXPECT_FALSE(run->Poll());
  fake_->Exit("ps:0", 1);
  EXPECT_FALSE(run->Poll());
  fake_->Exit("ps:0", 2);
  EXPECT_TRUE(run->Poll());
  const RunOutcome o = run->outcome();
  EXPECT_EQ(o.status.code(), StatusCode::kAborted);
  EXPECT_EQ(Message(o.status),
            "task ps:0 exited with status 2 before the run ended; stopped the "
            "other tasks; the last lines of ps:0's stderr:\n  boom");
  EXPECT_EQ(o.exit_code, std::nullopt);
  EXPECT_EQ(o.state, RunState::kFailed);
  EXPECT_THAT(CallsFrom(6), ElementsAre("stop worker:0", "stop worker:1",
                                        "stopped (final)", "fetch metrics"));
  EXPECT_TRUE(Noted("stopping every task"));
  // The ends the launcher caused are recorded as stopped, the failure as
  // failed.
  EXPECT_EQ(State(*run, "ps:0"), "failed");
  EXPECT_EQ(State(*run, "worker:0"), "stopped");
  EXPECT_EQ(Record(*run).state, RunState::kFailed);
}

// Elastic workers (min_workers = 2 of 3): a lost worker is left out while
// two are left, though restarts are left; the next one, which would leave
// one, is restarted; once out of restarts below min_workers the run ends.
TEST_F(SupervisorTest, ElasticWorkersAreLeftOutAboveMinWorkers) {
  std::unique_ptr<LaunchRun> run =
      Start(1, 3, /*max_restarts=*/1, /*min_workers=*/2);
  ASSERT_NE(run, nullptr);
  AllReady(*run);
  EXPECT_FALSE(run->Poll());
  const size_t calls = fake_->calls.size();
  fake_->Exit("worker:2", 1);
  EXPECT_FALSE(run->Poll());
  EXPECT_EQ(fake_->calls.size(), calls) << fake_->calls.back();
  EXPECT_TRUE(
      Noted("task worker:2 exited with status 1; the run goes on without it "
            "(2 of 3 workers left; min_workers = 2)"));
  fake_->Exit("worker:1", 1);
  EXPECT_FALSE(run->Poll());
  EXPECT_EQ(fake_->calls.back(), "start again worker:1");
  fake_->Exit("worker:1", 1);
  EXPECT_TRUE(run->Poll());
  const RunOutcome o = run->outcome();
  EXPECT_EQ(o.status.code(), StatusCode::kAborted);
  EXPECT_THAT(std::string(Message(o.status)),
              HasSubstr("task worker:1 exited with status 1 before the run "
                        "ended; 1 worker is left, fewer than min_workers = 2, "
                        "and its 1 restarts (max_restarts) are used up"));
}

TEST_F(SupervisorTest, AnAllreduceWorkerFailingRestartsEveryWorker) {
  std::unique_ptr<LaunchRun> run = Start(0, 3, /*max_restarts=*/1);
  ASSERT_NE(run, nullptr);
  AllReady(*run);
  EXPECT_FALSE(run->Poll());
  fake_->Exit("worker:1", 1);
  EXPECT_FALSE(run->Poll());
  EXPECT_THAT(CallsFrom(5), ElementsAre("stop worker:0", "stop worker:2",
                                        "stopped", "start again worker:0 (all)",
                                        "start again worker:1 (all)",
                                        "start again worker:2 (all)"));
  EXPECT_THAT(
      fake_->argv["worker:0"],
      ElementsAre("/bin/dtf", "serve", "--role", "worker", "--restore"));
  EXPECT_TRUE(
      Noted("task worker:1 exited with status 1; an allreduce run "
            "restarts every worker from the last checkpoint"));
  const RunRecord record = Record(*run);
  for (const TaskRecord& t : record.tasks) {
    EXPECT_EQ(t.restarts, 1) << t.task;
    EXPECT_EQ(t.state, TaskState::kStarting) << t.task;
  }
  EXPECT_EQ(record.state, RunState::kRunning);

  // Past its restarts the next failure ends the run.
  AllReady(*run);
  fake_->Exit("worker:2", 1);
  EXPECT_TRUE(run->Poll());
  EXPECT_EQ(run->outcome().status.code(), StatusCode::kAborted);
  EXPECT_THAT(Message(run->outcome().status), HasSubstr("worker:2"));
}

// A rank killed makes the chief fail at its next collective; both ends can
// show in one look, the chief's first. The lost rank restarts every worker
// all the same: the chief's end does not end the run.
TEST_F(SupervisorTest,
       AnAllreduceChiefFailingWithALostRankInOneLookRestartsAll) {
  std::unique_ptr<LaunchRun> run = Start(0, 2, /*max_restarts=*/1);
  ASSERT_NE(run, nullptr);
  AllReady(*run);
  EXPECT_FALSE(run->Poll());
  fake_->Exit("worker:0", 4);
  fake_->Exit("worker:1", 137);
  EXPECT_FALSE(run->Poll());
  EXPECT_THAT(CallsFrom(4), ElementsAre("stopped", "start again worker:0 (all)",
                                        "start again worker:1 (all)"));
  EXPECT_TRUE(
      Noted("task worker:1 exited with status 137; an allreduce run "
            "restarts every worker from the last checkpoint"));
  EXPECT_EQ(Record(*run).state, RunState::kRunning);

  // Once restarted, the chief's exit ends the run as it always does.
  AllReady(*run);
  fake_->Exit("worker:1", 0);
  fake_->Exit("worker:0", 0);
  EXPECT_TRUE(run->Poll());
  EXPECT_TRUE(run->outcome().status.ok()) << run->outcome().status;
}

TEST_F(SupervisorTest, ATaskThatNeverBecomesReadyEndsTheRun) {
  options_.start_timeout = std::chrono::milliseconds(500);
  std::unique_ptr<LaunchRun> run = Start(1, 2);
  ASSERT_NE(run, nullptr);
  fake_->MakeReady("ps:0");
  fake_->MakeReady("worker:0");
  EXPECT_FALSE(run->Poll());
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  EXPECT_TRUE(run->Poll());
  const RunOutcome o = run->outcome();
  EXPECT_EQ(o.status.code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(Message(o.status),
            "task worker:1 did not write its ready file within 0.5 s; "
            "stopped every task; the last lines of worker:1's stderr:\n  "
            "boom");
  EXPECT_EQ(o.state, RunState::kFailed);
  EXPECT_THAT(CallsFrom(5),
              ElementsAre("stop worker:0", "stop worker:1", "stop ps:0",
                          "stopped (final)", "fetch metrics"));
}

TEST_F(SupervisorTest, TheCancelFlagStopsEveryTask) {
  std::atomic<bool> cancel{false};
  options_.cancel = &cancel;
  std::unique_ptr<LaunchRun> run = Start(2, 2);
  ASSERT_NE(run, nullptr);
  AllReady(*run);
  EXPECT_FALSE(run->Poll());
  cancel = true;
  EXPECT_TRUE(run->Poll());
  const RunOutcome o = run->outcome();
  EXPECT_EQ(o.status.code(), StatusCode::kCancelled);
  EXPECT_EQ(Message(o.status), "interrupted; stopped every task of run run1");
  EXPECT_EQ(o.state, RunState::kStopped);
  EXPECT_THAT(CallsFrom(6),
              ElementsAre("stop worker:0", "stop worker:1", "stop ps:0",
                          "stop ps:1", "stopped (final)", "fetch metrics"));
  const RunRecord record = Record(*run);
  EXPECT_EQ(record.state, RunState::kStopped);
  for (const TaskRecord& t : record.tasks)
    EXPECT_EQ(t.state, TaskState::kStopped);
  // Over is over.
  EXPECT_TRUE(run->Poll());
  EXPECT_EQ(fake_->calls.back(), "fetch metrics");
}

TEST_F(SupervisorTest, PastTheDeadlineEveryTaskIsStopped) {
  options_.deadline = std::chrono::milliseconds(500);
  std::unique_ptr<LaunchRun> run = Start(1, 1);
  ASSERT_NE(run, nullptr);
  AllReady(*run);
  EXPECT_FALSE(run->Poll());
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  EXPECT_TRUE(run->Poll());
  const RunOutcome o = run->outcome();
  EXPECT_EQ(o.status.code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(Message(o.status),
            "the run's deadline (--deadline 0.5 s) passed; stopped every "
            "task (the chief writes its checkpoint as it stops)");
  EXPECT_THAT(CallsFrom(4), ElementsAre("stop worker:0", "stop ps:0",
                                        "stopped (final)", "fetch metrics"));
  EXPECT_EQ(State(*run, "worker:0"), "stopped");
}

TEST_F(SupervisorTest,
       AWorkerDyingInAParameterServerRunIsNotedAndTheRunGoesOn) {
  std::unique_ptr<LaunchRun> run = Start(1, 3);
  ASSERT_NE(run, nullptr);
  AllReady(*run);
  EXPECT_FALSE(run->Poll());
  fake_->Exit("worker:2", 1);
  EXPECT_FALSE(run->Poll());
  EXPECT_TRUE(
      Noted("task worker:2 exited with status 1; the run goes on "
            "without it; the last lines of worker:2's stderr:\n  "
            "boom"));
  EXPECT_EQ(State(*run, "worker:2"), "failed");
  // Nothing was stopped or started again.
  EXPECT_THAT(fake_->calls,
              ElementsAre("place", "prepare", "start ps:0", "start worker:0",
                          "start worker:1", "start worker:2"));

  fake_->Exit("worker:0", 0);
  fake_->Exit("worker:1", 0);
  fake_->Exit("ps:0", 0);
  EXPECT_TRUE(run->Poll());
  EXPECT_TRUE(run->outcome().status.ok()) << run->outcome().status;
  EXPECT_EQ(run->outcome().exit_code, 0);
  EXPECT_EQ(Record(*run).state, RunState::kSucceeded);
}

// `dtf stop` writes stop.json and signals the tasks itself; the run records
// their ends as stopped and ends Cancelled.
TEST_F(SupervisorTest, ATaskEndingAfterDtfStopEndsTheRunStopped) {
  std::unique_ptr<LaunchRun> run = Start(1, 2);
  ASSERT_NE(run, nullptr);
  AllReady(*run);
  EXPECT_FALSE(run->Poll());
  WriteStopFile(*run);
  // Until a task ends, the run goes on: the stop is dtf stop's to do.
  EXPECT_FALSE(run->Poll());
  fake_->Exit("worker:1", 143);
  EXPECT_TRUE(run->Poll());
  EXPECT_EQ(run->outcome().status.code(), StatusCode::kCancelled);
  EXPECT_EQ(Message(run->outcome().status), "run run1 was stopped (dtf stop)");
  EXPECT_EQ(run->outcome().state, RunState::kStopped);
  EXPECT_EQ(State(*run, "worker:1"), "stopped");
  EXPECT_THAT(CallsFrom(5), ElementsAre("stop worker:0", "stop ps:0",
                                        "stopped (final)", "fetch metrics"));
}

// A backend whose tasks dtf stop cannot reach: the run stops them at its
// next look.
TEST_F(SupervisorTest, ABackendThatStopsOnRequestStopsEveryTaskAtTheNextLook) {
  std::unique_ptr<LaunchRun> run = Start(1, 1);
  ASSERT_NE(run, nullptr);
  fake_->stops_on_request = true;
  AllReady(*run);
  EXPECT_FALSE(run->Poll());
  WriteStopFile(*run);
  EXPECT_TRUE(run->Poll());
  EXPECT_EQ(Message(run->outcome().status), "run run1 was stopped (dtf stop)");
  EXPECT_EQ(Record(*run).state, RunState::kStopped);
  EXPECT_THAT(CallsFrom(4), ElementsAre("stop worker:0", "stop ps:0",
                                        "stopped (final)", "fetch metrics"));
}

TEST_F(SupervisorTest, ARunDroppedBeforeItsEndStopsItsTasks) {
  std::unique_ptr<LaunchRun> run = Start(1, 1);
  ASSERT_NE(run, nullptr);
  const std::string run_dir = run->plan().run_dir;
  EXPECT_EQ(fake_->calls.size(), 4u);
  fake_ = nullptr;  // goes with the run
  run.reset();
  // The backend is gone with the run; its record says what happened.
  StatusOr<RunRecord> record = ReadRunRecord(run_dir);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->state, RunState::kStopped);
  EXPECT_EQ(record->message, "the launcher went away");
  for (const TaskRecord& t : record->tasks)
    EXPECT_EQ(t.state, TaskState::kStopped);
}

}  // namespace
}  // namespace dtf::launch
