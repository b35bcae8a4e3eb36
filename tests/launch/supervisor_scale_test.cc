// Worker slots reserved at launch (the profile's max_workers) and started
// by dtf scale (Run::Scale, <run dir>/scale.json), and allreduce runs
// restarted at a new size (a lost worker above min_workers, a scale), on
// the fake backend.
#include <chrono>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/launch/run_scale.h"
#include "tests/launch/supervisor_testing.h"

namespace dtf::launch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// 1 PS and 2 of 4 worker slots: the reserved ones are not started,
// recorded "reserved", neither waited for to be ready nor counted as live;
// a scale request starts slot 2, once; the chief's exit ends the run with
// slot 3 never started.
TEST_F(SupervisorTest, ReservedSlotsStartOnlyWhenTheRunIsScaled) {
  std::unique_ptr<LaunchRun> run = Start(1, 4, 0, 0, /*launch_workers=*/2);
  ASSERT_NE(run, nullptr);
  EXPECT_THAT(fake_->calls, ElementsAre("place", "prepare", "start ps:0",
                                        "start worker:0", "start worker:1"));
  EXPECT_EQ(State(*run, "worker:2"), "reserved");
  EXPECT_EQ(State(*run, "worker:3"), "reserved");
  for (const char* t : {"ps:0", "worker:0", "worker:1"}) fake_->MakeReady(t);
  EXPECT_FALSE(run->Poll());

  const size_t before = fake_->calls.size();
  ASSERT_TRUE(WriteScaleRequest(run->plan().run_dir, 3).ok());
  EXPECT_FALSE(run->Poll());
  EXPECT_FALSE(run->Poll());  // the same request is taken once
  EXPECT_THAT(CallsFrom(before), ElementsAre("start reserved worker:2"));
  EXPECT_EQ(State(*run, "worker:2"), "starting");
  EXPECT_EQ(State(*run, "worker:3"), "reserved");
  EXPECT_TRUE(Noted("dtf scale: started worker:2 (3 of 4 worker slots)"))
      << ::testing::PrintToString(notes_);
  fake_->MakeReady("worker:2");
  EXPECT_FALSE(run->Poll());
  EXPECT_EQ(State(*run, "worker:2"), "running");

  // Fewer than are started, or more than the slots: refused, nothing
  // started.
  EXPECT_THAT(Message(run->Scale(2)), HasSubstr("has started 3 workers"));
  EXPECT_THAT(Message(run->Scale(5)), HasSubstr("4 worker slots"));
  EXPECT_EQ(fake_->calls.size(), before + 1);

  fake_->Exit("worker:0", 0);
  fake_->Exit("worker:1", 0);
  fake_->Exit("worker:2", 0);
  fake_->Exit("ps:0", 0);
  EXPECT_TRUE(run->Poll());
  EXPECT_TRUE(run->outcome().status.ok()) << run->outcome().status;
  EXPECT_EQ(State(*run, "worker:3"), "reserved");
}

// A reserved slot never started does not fail the run for want of its
// ready file, and a request the run cannot take is noted, not acted on.
TEST_F(SupervisorTest, AReservedSlotIsNeverLateAndABadRequestIsNoted) {
  options_.start_timeout = std::chrono::milliseconds(1);
  std::unique_ptr<LaunchRun> run = Start(1, 3, 0, 0, /*launch_workers=*/2);
  ASSERT_NE(run, nullptr);
  for (const char* t : {"ps:0", "worker:0", "worker:1"}) fake_->MakeReady(t);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_FALSE(run->Poll());
  ASSERT_TRUE(WriteScaleRequest(run->plan().run_dir, 7).ok());
  EXPECT_FALSE(run->Poll());
  EXPECT_TRUE(Noted("dtf scale: --workers 7: run run1 has 3 worker slots"))
      << ::testing::PrintToString(notes_);
  EXPECT_EQ(State(*run, "worker:2"), "reserved");
}

// Elastic: a worker lost above min_workers is counted against the workers
// started, not the slots.
TEST_F(SupervisorTest, ALostWorkersNoteCountsTheStartedWorkers) {
  std::unique_ptr<LaunchRun> run =
      Start(1, 4, 0, /*min_workers=*/1, /*launch_workers=*/2);
  ASSERT_NE(run, nullptr);
  for (const char* t : {"ps:0", "worker:0", "worker:1"}) fake_->MakeReady(t);
  EXPECT_FALSE(run->Poll());
  fake_->Exit("worker:1", 1);
  EXPECT_FALSE(run->Poll());
  EXPECT_TRUE(Noted("the run goes on without it (1 of 2 workers left"))
      << ::testing::PrintToString(notes_);
}

// An allreduce rank lost above min_workers, the chief's end (its
// collective failed) in the same look: the chief counts as live, and
// every other worker starts again without the lost one, their command
// lines naming the members; no restart is counted. A loss below
// min_workers with no restarts left then ends the run.
TEST_F(SupervisorTest, AnAllreduceRankLostAboveMinWorkersLeavesItOut) {
  std::unique_ptr<LaunchRun> run = Start(0, 3, /*max_restarts=*/0,
                                         /*min_workers=*/2);
  ASSERT_NE(run, nullptr);
  AllReady(*run);
  EXPECT_FALSE(run->Poll());
  const size_t before = fake_->calls.size();
  fake_->Exit("worker:0", 4);
  fake_->Exit("worker:1", 137);
  EXPECT_FALSE(run->Poll());
  EXPECT_THAT(CallsFrom(before), ElementsAre("stop worker:2", "stopped",
                                             "start again worker:0 (all)",
                                             "start again worker:2 (all)"));
  EXPECT_THAT(fake_->argv["worker:2"],
              ElementsAre("/bin/dtf", "serve", "--role", "worker", "--members",
                          "0,2", "--restore"));
  EXPECT_TRUE(
      Noted("task worker:1 exited with status 137; 2 workers are "
            "left (min_workers = 2): every worker starts again "
            "without it from the last checkpoint, at 2 ranks "
            "(workers 0,2)"))
      << ::testing::PrintToString(notes_);
  const RunRecord record = Record(*run);
  for (const TaskRecord& t : record.tasks) EXPECT_EQ(t.restarts, 0) << t.task;
  EXPECT_EQ(State(*run, "worker:1"), "failed");
  EXPECT_EQ(State(*run, "worker:2"), "starting");

  AllReady(*run);
  fake_->Exit("worker:2", 1);
  EXPECT_TRUE(run->Poll());
  EXPECT_EQ(run->outcome().status.code(), StatusCode::kAborted);
  EXPECT_THAT(Message(run->outcome().status),
              HasSubstr("task worker:2 exited with status 1 before the run "
                        "ended; an allreduce run cannot go on"));
}

// An allreduce run of 2 of 3 worker slots scaled to 3: every worker starts
// again from the last checkpoint with the new one, at 3 ranks.
TEST_F(SupervisorTest, AnAllreduceRunScaledRestartsEveryWorkerWithTheNewOne) {
  std::unique_ptr<LaunchRun> run = Start(0, 3, 0, 0, /*launch_workers=*/2);
  ASSERT_NE(run, nullptr);
  fake_->MakeReady("worker:0");
  fake_->MakeReady("worker:1");
  EXPECT_FALSE(run->Poll());
  const size_t before = fake_->calls.size();
  ASSERT_TRUE(WriteScaleRequest(run->plan().run_dir, 3).ok());
  EXPECT_FALSE(run->Poll());
  EXPECT_THAT(
      CallsFrom(before),
      ElementsAre("stop worker:0", "stop worker:1", "stopped",
                  "start again worker:0 (all)", "start again worker:1 (all)",
                  "start again worker:2 (all)"));
  EXPECT_THAT(
      fake_->argv["worker:0"],
      ::testing::IsSupersetOf({std::string("--members"), std::string("0,1,2"),
                               std::string("--restore")}));
  EXPECT_TRUE(
      Noted("dtf scale: every worker starts again from the last "
            "checkpoint with worker:2, at 3 ranks (workers 0,1,2)"))
      << ::testing::PrintToString(notes_);
  EXPECT_EQ(State(*run, "worker:2"), "starting");
  AllReady(*run);
  EXPECT_FALSE(run->Poll());
  EXPECT_EQ(State(*run, "worker:2"), "running");
  for (const char* t : {"worker:1", "worker:2", "worker:0"}) {
    fake_->Exit(t, 0);
  }
  EXPECT_TRUE(run->Poll());
  EXPECT_TRUE(run->outcome().status.ok()) << run->outcome().status;
}

}  // namespace
}  // namespace dtf::launch
