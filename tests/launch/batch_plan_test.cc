// Batch plans (PlanRequest::batch_command): workers only, each running its
// own command; a local run of them ends when every task has exited, or at
// the first that fails.
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/launch/local/local_backend.h"
#include "lib/launch/plan.h"
#include "lib/launch/restart_policy.h"
#include "lib/launch/run_status.h"
#include "tests/launch/launch_testing.h"
#include "tests/testing/temp_dir.h"

namespace dtf::launch {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

class BatchPlanTest : public ::testing::Test {
 protected:
  // A plan of `workers` tasks, task k running `scripts[k]` under /bin/sh
  // with its ready file as $1.
  PlanRequest Request(const std::vector<std::string>& scripts,
                      const std::string& profile = "") {
    PlanRequest r = testing::Request(
        dir_, "/bin/sh",
        StrCat("ps = 2\nworkers = ", scripts.size(), "\n", profile));
    r.runs_dir = dir_.Join("runs");
    r.batch_command = [scripts](const TaskPlan& task, const std::string& binary,
                                const std::string&) {
      return std::vector<std::string>{binary, "-c", scripts[size_t(task.index)],
                                      "sh", task.ready_file};
    };
    return r;
  }
  RunOptions Options() {
    RunOptions o;
    o.grace = 200ms;
    o.start_timeout = 60s;
    o.poll = 10ms;
    o.on_output = [this](const TaskPlan& task, Stream stream,
                         std::string_view line) {
      lines_.push_back(StrCat(
          task.name(), stream == Stream::kStdout ? " out: " : " err: ", line));
    };
    return o;
  }

  dtf::testing::TempDir dir_{"dtf_batch_plan_test"};
  std::vector<std::string> lines_;
};

TEST_F(BatchPlanTest, WorkersOnlyEachRunningTheCommand) {
  // max_restarts needs periodic checkpoints in a training plan, not here.
  StatusOr<Plan> plan =
      MakePlan(Request({"exit 0", "exit 0", "exit 0"}, "max_restarts = 2\n"));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->batch);
  EXPECT_EQ(plan->ps, 0);
  EXPECT_EQ(plan->max_restarts, 0);
  ASSERT_EQ(plan->tasks.size(), 3u);
  for (int k = 0; k < 3; ++k) {
    const TaskPlan& t = plan->tasks[size_t(k)];
    EXPECT_EQ(t.role, Role::kWorker);
    EXPECT_EQ(t.index, k);
    EXPECT_EQ(t.argv, (std::vector<std::string>{"/bin/sh", "-c", "exit 0", "sh",
                                                t.ready_file}));
  }
  StatusOr<Plan> back = PlanFromJson(PlanToJson(*plan), "plan.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->batch);
  EXPECT_EQ(PlanToJson(*back), PlanToJson(*plan));

  // No task is special, none restarted: a failure ends the run.
  EXPECT_EQ(OnTaskEnded(*plan, plan->tasks[0], true, false, 0),
            TaskEndAction::kNone);
  EXPECT_EQ(OnTaskEnded(*plan, plan->tasks[0], false, false, 0),
            TaskEndAction::kFail);
  EXPECT_EQ(OnTaskEnded(*plan, plan->tasks[2], false, false, 0),
            TaskEndAction::kFail);
}

// The first task ends at once; the run waits for the other, far past the
// grace a training run gives the tasks after its chief.
// A batch run's tasks get the run's S3 settings and credentials as a
// training run's do: the file in the run directory, named after each
// command (they were left without them, reaching a bucket with whatever
// their host had).
TEST_F(BatchPlanTest, TasksGetTheRunsS3File) {
  PlanRequest r = Request({"exit 0", "exit 0"});
  r.s3_credentials = "AWS_REGION=us-east-1\n";
  r.s3_variables = {"AWS_REGION"};
  StatusOr<Plan> plan = MakePlan(r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->s3_file, plan->run_dir + "/s3-credentials");
  for (const TaskPlan& t : plan->tasks) {
    ASSERT_GE(t.argv.size(), 2u);
    EXPECT_EQ(t.argv[t.argv.size() - 2], "--s3-credentials") << t.name();
    EXPECT_EQ(t.argv.back(), plan->run_dir + "/s3-credentials");
  }
  r.s3_credentials.clear();
  plan = MakePlan(r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->s3_file.empty());
  EXPECT_EQ(plan->tasks[0].argv.back(), plan->tasks[0].ready_file);
}

TEST_F(BatchPlanTest, TheRunEndsWhenEveryTaskHasExited) {
  const std::string done = dir_.Join("done-1");
  StatusOr<std::unique_ptr<LocalRun>> run = LocalRun::Start(
      Request({"echo 0 > \"$1\"; echo first",
               "echo 1 > \"$1\"; sleep 1; echo late; touch '" + done + "'"}),
      Options());
  ASSERT_TRUE(run.ok()) << run.status();
  const RunOutcome outcome = (*run)->Wait();
  EXPECT_TRUE(outcome.status.ok()) << outcome.status;
  EXPECT_EQ(outcome.state, RunState::kSucceeded);
  EXPECT_TRUE(std::filesystem::exists(done));
  EXPECT_THAT(lines_, ::testing::Contains("worker:1 out: late"));
}

TEST_F(BatchPlanTest, AFailingTaskEndsTheRunNamingItAndStopsTheOthers) {
  const auto start = std::chrono::steady_clock::now();
  StatusOr<std::unique_ptr<LocalRun>> run = LocalRun::Start(
      Request({"echo 0 > \"$1\"; sleep 60",
               "echo 1 > \"$1\"; sleep 0.2; echo 'boom: bad input' >&2; "
               "exit 3"}),
      Options());
  ASSERT_TRUE(run.ok()) << run.status();
  const RunOutcome outcome = (*run)->Wait();
  EXPECT_EQ(outcome.status.code(), StatusCode::kAborted);
  EXPECT_THAT(Message(outcome.status),
              HasSubstr("task worker:1 exited with status 3"));
  EXPECT_THAT(Message(outcome.status), HasSubstr("boom: bad input"));
  EXPECT_EQ(outcome.state, RunState::kFailed);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
}

// dtf status on a batch run in progress: no coordinator to ask, the states
// from the records.
TEST_F(BatchPlanTest, StatusReadsTheRecordsWithoutAChief) {
  StatusOr<std::unique_ptr<LocalRun>> run = LocalRun::Start(
      Request({"echo 0 > \"$1\"; sleep 60", "echo 1 > \"$1\"; sleep 60"}),
      Options());
  ASSERT_TRUE(run.ok()) << run.status();
  const auto until = std::chrono::steady_clock::now() + 30s;
  while (!((*run)->ready(0) && (*run)->ready(1)) &&
         std::chrono::steady_clock::now() < until) {
    (*run)->Poll();
    std::this_thread::sleep_for(10ms);
  }
  StatusOr<RunStatus> status =
      CollectRunStatus((*run)->plan().run_dir, std::chrono::seconds(5));
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_FALSE(status->from_chief);
  EXPECT_EQ(status->chief_error, "");
  ASSERT_EQ(status->tasks.size(), 2u);
  EXPECT_EQ(status->tasks[0].state, "running");
  EXPECT_EQ(status->tasks[1].state, "running");
  (*run)->Stop(CancelledError("done"));
}

}  // namespace
}  // namespace dtf::launch
