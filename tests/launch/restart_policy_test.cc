#include "lib/launch/restart_policy.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/launch/allreduce_members.h"
#include "lib/launch/ssh/host_link.h"

namespace dtf::launch {
namespace {

using ::testing::ElementsAre;

// A parameter-server plan (2 PS, 2 workers) or an allreduce one (no PS).
Plan MakeTestPlan(int ps, int max_restarts) {
  Plan plan;
  plan.ps = ps;
  plan.workers = 2;
  plan.max_restarts = max_restarts;
  for (int i = 0; i < ps; ++i) {
    TaskPlan t;
    t.role = Role::kPs;
    t.index = i;
    t.argv = {"/bin/dtf", "serve", "--role", "ps"};
    plan.tasks.push_back(t);
  }
  for (int i = 0; i < 2; ++i) {
    TaskPlan t;
    t.role = Role::kWorker;
    t.index = i;
    t.chief = i == 0;
    t.argv = {"/bin/dtf", "serve", "--role", "worker"};
    plan.tasks.push_back(t);
  }
  return plan;
}

TEST(RestartPolicy, FailedTasksRestartUpToMaxRestarts) {
  const Plan plan = MakeTestPlan(2, 2);
  const TaskPlan& ps1 = plan.tasks[1];
  const TaskPlan& worker1 = plan.tasks[3];
  for (const TaskPlan* t : {&ps1, &worker1}) {
    EXPECT_EQ(OnTaskEnded(plan, *t, false, false, 0), TaskEndAction::kRestart);
    EXPECT_EQ(OnTaskEnded(plan, *t, false, false, 1), TaskEndAction::kRestart);
  }
  // Out of restarts: a worker is left out, a parameter server ends the run.
  EXPECT_EQ(OnTaskEnded(plan, ps1, false, false, 2), TaskEndAction::kFail);
  EXPECT_EQ(OnTaskEnded(plan, worker1, false, false, 2), TaskEndAction::kGoOn);
  // A clean exit, or any end once the chief has exited, is left alone.
  EXPECT_EQ(OnTaskEnded(plan, ps1, true, false, 0), TaskEndAction::kNone);
  EXPECT_EQ(OnTaskEnded(plan, ps1, false, true, 0), TaskEndAction::kNone);
}

TEST(RestartPolicy, TheChiefIsNeverRestarted) {
  const Plan plan = MakeTestPlan(2, 5);
  const TaskPlan& chief = plan.tasks[2];
  ASSERT_TRUE(chief.chief);
  EXPECT_EQ(OnTaskEnded(plan, chief, false, false, 0),
            TaskEndAction::kChiefExited);
  EXPECT_EQ(OnTaskEnded(plan, chief, true, false, 0),
            TaskEndAction::kChiefExited);
}

TEST(RestartPolicy, WithoutRestartsAWorkerIsLeftOutAndAPsEndsTheRun) {
  const Plan plan = MakeTestPlan(2, 0);
  EXPECT_EQ(OnTaskEnded(plan, plan.tasks[0], false, false, 0),
            TaskEndAction::kFail);
  EXPECT_EQ(OnTaskEnded(plan, plan.tasks[3], false, false, 0),
            TaskEndAction::kGoOn);
}

// Elastic workers: a failed worker is left out while min_workers are
// left, restarted below, and past its restarts ends the run; parameter
// servers and the chief are not affected, nor a call that does not say
// how many workers are left.
TEST(RestartPolicy, MinWorkersLeavesOutAWorkerWhileEnoughAreLeft) {
  Plan plan = MakeTestPlan(2, 1);
  plan.min_workers = 1;
  const TaskPlan& ps1 = plan.tasks[1];
  const TaskPlan& worker1 = plan.tasks[3];
  EXPECT_EQ(OnTaskEnded(plan, worker1, false, false, 0, 1),
            TaskEndAction::kGoOn);
  EXPECT_EQ(OnTaskEnded(plan, worker1, false, false, 0, 0),
            TaskEndAction::kRestart);
  EXPECT_EQ(OnTaskEnded(plan, worker1, false, false, 1, 0),
            TaskEndAction::kFailBelowMin);
  EXPECT_EQ(OnTaskEnded(plan, worker1, false, false, 0),
            TaskEndAction::kRestart);
  EXPECT_EQ(OnTaskEnded(plan, ps1, false, false, 0, 2),
            TaskEndAction::kRestart);
  EXPECT_EQ(OnTaskEnded(plan, plan.tasks[2], false, false, 0, 1),
            TaskEndAction::kChiefExited);
  EXPECT_EQ(OnTaskEnded(plan, worker1, true, false, 0, 0),
            TaskEndAction::kNone);
}

// An allreduce worker cannot rejoin alone: its failure restarts every
// worker while restarts are left, then ends the run.
TEST(RestartPolicy, AllreduceRestartsEveryWorkerUpToMaxRestarts) {
  const Plan plan = MakeTestPlan(0, 2);
  ASSERT_TRUE(plan.allreduce());
  const TaskPlan& worker1 = plan.tasks[1];
  EXPECT_EQ(OnTaskEnded(plan, worker1, false, false, 0),
            TaskEndAction::kRestartAll);
  EXPECT_EQ(OnTaskEnded(plan, worker1, false, false, 1),
            TaskEndAction::kRestartAll);
  EXPECT_EQ(OnTaskEnded(plan, worker1, false, false, 2),
            TaskEndAction::kFailAllreduce);
  EXPECT_EQ(OnTaskEnded(plan, worker1, true, false, 0), TaskEndAction::kNone);
  EXPECT_EQ(OnTaskEnded(plan, worker1, false, true, 0), TaskEndAction::kNone);
  // The chief's own end still ends the run.
  EXPECT_EQ(OnTaskEnded(plan, plan.tasks[0], false, false, 0),
            TaskEndAction::kChiefExited);
  EXPECT_EQ(RestartAllNote(plan, worker1, "killed by SIGKILL", 0),
            "task worker:1 killed by SIGKILL; an allreduce run restarts every "
            "worker from the last checkpoint (1 of 2 restarts)");
  EXPECT_EQ(AllreduceWorkerLost(plan, worker1, "exited with status 3"),
            "task worker:1 exited with status 3 before the run ended; an "
            "allreduce run cannot go on without one of its workers (the "
            "others would wait for it in their collectives for ever), and its "
            "2 restarts (max_restarts) are used up; stopped the other tasks");
}

// Elastic workers in an allreduce run: a worker lost while min_workers are
// left restarts every other worker at the new size, using no restart;
// below min_workers it restarts every worker as restarts allow.
TEST(RestartPolicy, AllreduceAboveMinWorkersRestartsTheOthersWithoutIt) {
  Plan plan = MakeTestPlan(0, 1);
  plan.min_workers = 1;
  const TaskPlan& worker1 = plan.tasks[1];
  EXPECT_EQ(OnTaskEnded(plan, worker1, false, false, 0, 1),
            TaskEndAction::kResizeAll);
  EXPECT_EQ(OnTaskEnded(plan, worker1, false, false, 5, 1),
            TaskEndAction::kResizeAll);
  EXPECT_EQ(OnTaskEnded(plan, worker1, false, false, 0, 0),
            TaskEndAction::kRestartAll);
  EXPECT_EQ(OnTaskEnded(plan, worker1, false, false, 1, 0),
            TaskEndAction::kFailAllreduce);
  // Not known how many are left: restarted as without min_workers.
  EXPECT_EQ(OnTaskEnded(plan, worker1, false, false, 0),
            TaskEndAction::kRestartAll);
  EXPECT_EQ(OnTaskEnded(plan, plan.tasks[0], false, false, 0, 1),
            TaskEndAction::kChiefExited);
  EXPECT_EQ(ResizeNote(plan, worker1, "killed by SIGKILL", {0}),
            "task worker:1 killed by SIGKILL; 1 worker is left (min_workers = "
            "1): every worker starts again without it from the last "
            "checkpoint, at 1 rank (worker 0)");
  EXPECT_EQ(ResizeNote(plan, worker1, "exited with status 1", {0, 2}),
            "task worker:1 exited with status 1; 2 workers are left "
            "(min_workers = 1): every worker starts again without it from "
            "the last checkpoint, at 2 ranks (workers 0,2)");
}

// The workers taking part reach every worker's command line, and so every
// restart's; none where every slot takes part.
TEST(RestartPolicy, MembersReachEveryWorkersCommandLine) {
  Plan plan = MakeTestPlan(0, 1);
  plan.workers = 3;
  TaskPlan third = plan.tasks[1];
  third.index = 2;
  plan.tasks.push_back(third);
  SetMembers({0, 2}, &plan);
  for (const TaskPlan& t : plan.tasks) {
    EXPECT_THAT(t.argv, ElementsAre("/bin/dtf", "serve", "--role", "worker",
                                    "--members", "0,2"))
        << t.name();
  }
  EXPECT_THAT(RestartArgv(plan.tasks[2]),
              ElementsAre("/bin/dtf", "serve", "--role", "worker", "--members",
                          "0,2", "--restore"));
  SetMembers({0, 1}, &plan);
  EXPECT_THAT(plan.tasks[1].argv, ElementsAre("/bin/dtf", "serve", "--role",
                                              "worker", "--members", "0,1"));
  SetMembers({0, 1, 2}, &plan);
  EXPECT_THAT(plan.tasks[2].argv,
              ElementsAre("/bin/dtf", "serve", "--role", "worker"));
}

TEST(RestartPolicy, AllreduceWithoutRestartsEndsTheRun) {
  const Plan plan = MakeTestPlan(0, 0);
  EXPECT_EQ(OnTaskEnded(plan, plan.tasks[1], false, false, 0),
            TaskEndAction::kFailAllreduce);
  EXPECT_THAT(AllreduceWorkerLost(plan, plan.tasks[1], "killed by SIGKILL"),
              ::testing::HasSubstr("and max_restarts is 0; stopped"));
}

// A restarted task restores: a PS its shard, a worker its input position.
TEST(RestartPolicy, ARestartedTaskRestores) {
  const Plan plan = MakeTestPlan(1, 1);
  EXPECT_THAT(RestartArgv(plan.tasks[0]),
              ElementsAre("/bin/dtf", "serve", "--role", "ps", "--restore"));
  std::vector<std::string> worker = plan.tasks[2].argv;
  worker.push_back("--restore");
  EXPECT_EQ(RestartArgv(plan.tasks[2]), worker);
  EXPECT_EQ(RestartNote(plan, plan.tasks[0], "killed by SIGKILL", 0),
            "ps:0 killed by SIGKILL; starting it again (1 of 1 restarts)");
}

TEST(ReconnectDelay, DoublesUpToTheCap) {
  ReconnectPolicy p;
  p.first_delay = std::chrono::milliseconds(500);
  p.max_delay = std::chrono::milliseconds(8000);
  std::vector<int64_t> delays;
  for (int a = 1; a <= 7; ++a) delays.push_back(ReconnectDelay(p, a).count());
  EXPECT_THAT(delays, ElementsAre(500, 1000, 2000, 4000, 8000, 8000, 8000));
}

}  // namespace
}  // namespace dtf::launch
