#include "lib/launch/slurm/slurm_env.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dtf::launch::slurm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Two nodes of two tasks and one of one, as `srun -N3 -n5` lays them out.
Environment FiveTasks(int procid) {
  const int local[] = {0, 1, 0, 1, 0};
  const char* node[] = {"gpu01", "gpu01", "gpu02", "gpu02", "gpu03"};
  return {{"SLURM_PROCID", std::to_string(procid)},
          {"SLURM_NTASKS", "5"},
          {"SLURM_LOCALID", std::to_string(local[procid])},
          {"SLURM_STEP_NODELIST", "gpu[01-03]"},
          {"SLURM_JOB_NODELIST", "gpu[01-04]"},
          {"SLURM_STEP_TASKS_PER_NODE", "2(x2),1"},
          {"SLURMD_NODENAME", node[procid]},
          {"SLURM_JOB_ID", "4242"},
          {"SLURM_STEP_ID", "0"}};
}

std::string ErrorOf(const Environment& env) {
  StatusOr<SlurmStep> step = ReadSlurmStep(env);
  EXPECT_FALSE(step.ok());
  if (step.ok()) return "";
  EXPECT_EQ(step.status().code(), StatusCode::kInvalidArgument);
  return std::string(Message(step.status()));
}

TEST(TasksPerNode, Expands) {
  auto counts = ExpandTasksPerNode("2(x2),1", "V");
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_THAT(*counts, ElementsAre(2, 2, 1));
  counts = ExpandTasksPerNode("3", "V");
  ASSERT_TRUE(counts.ok());
  EXPECT_THAT(*counts, ElementsAre(3));
  counts = ExpandTasksPerNode("1,4(x3)", "V");
  ASSERT_TRUE(counts.ok());
  EXPECT_THAT(*counts, ElementsAre(1, 4, 4, 4));
}

TEST(TasksPerNode, RefusesMalformed) {
  for (const char* bad : {"", "2(x)", "2(2)", "x", "2,,1", "0", "2(x0)", "2(x2",
                          "-1", "2(x2),"}) {
    auto counts = ExpandTasksPerNode(bad, "SLURM_STEP_TASKS_PER_NODE");
    EXPECT_FALSE(counts.ok()) << bad;
    if (!counts.ok()) {
      EXPECT_THAT(Message(counts.status()),
                  HasSubstr(std::string("SLURM_STEP_TASKS_PER_NODE=\"") + bad +
                            "\": expected"));
    }
  }
}

TEST(SlurmEnv, ReadsTheStep) {
  StatusOr<SlurmStep> step = ReadSlurmStep(FiveTasks(3));
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_EQ(step->procid, 3);
  EXPECT_EQ(step->ntasks, 5);
  EXPECT_EQ(step->localid, 1);
  // The step's nodes, not the job's.
  EXPECT_THAT(step->nodes, ElementsAre("gpu01", "gpu02", "gpu03"));
  EXPECT_THAT(step->tasks_per_node, ElementsAre(2, 2, 1));
  EXPECT_EQ(step->node_name, "gpu02");
  EXPECT_EQ(step->job_id, "4242");
  EXPECT_EQ(step->step_id, "0");
}

TEST(SlurmEnv, FallsBackToTheJobsVariables) {
  Environment env = {{"SLURM_PROCID", "1"},
                     {"SLURM_NPROCS", "2"},
                     {"SLURM_LOCALID", "0"},
                     {"SLURM_JOB_NODELIST", "a,b"},
                     {"SLURM_TASKS_PER_NODE", "1(x2)"}};
  StatusOr<SlurmStep> step = ReadSlurmStep(env);
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_EQ(step->ntasks, 2);
  EXPECT_THAT(step->nodes, ElementsAre("a", "b"));
  EXPECT_EQ(step->node_name, "");
}

TEST(SlurmEnv, NamesTheVariableAtFault) {
  Environment env = FiveTasks(0);
  env.erase("SLURM_PROCID");
  EXPECT_EQ(ErrorOf(env), "SLURM_PROCID: not set (is this an srun task?)");
  env = FiveTasks(0);
  env["SLURM_NTASKS"] = "five";
  EXPECT_EQ(ErrorOf(env),
            "SLURM_NTASKS=\"five\": expected an integer from 1 to 1000000");
  env = FiveTasks(0);
  env["SLURM_STEP_NODELIST"] = "gpu[03-01]";
  EXPECT_EQ(ErrorOf(env),
            "SLURM_STEP_NODELIST: hostlist \"gpu[03-01]\":5: range 03-01 "
            "runs backwards");
  env = FiveTasks(0);
  env["SLURM_STEP_TASKS_PER_NODE"] = "2(x2)";
  EXPECT_THAT(
      ErrorOf(env),
      HasSubstr("SLURM_STEP_TASKS_PER_NODE=\"2(x2)\": counts tasks on "
                "2 nodes, but SLURM_STEP_NODELIST=\"gpu[01-03]\" has 3"));
  env = FiveTasks(0);
  env["SLURM_STEP_TASKS_PER_NODE"] = "2(x2),2";
  EXPECT_EQ(ErrorOf(env),
            "SLURM_STEP_TASKS_PER_NODE=\"2(x2),2\": sums to 6 tasks, but "
            "SLURM_NTASKS is 5");
  env = FiveTasks(4);
  env["SLURM_PROCID"] = "5";
  EXPECT_EQ(ErrorOf(env), "SLURM_PROCID=\"5\": not below SLURM_NTASKS=5");
}

TEST(SlurmEnv, RefusesAnotherDistribution) {
  // --distribution=cyclic puts task 1 on the second node.
  Environment env = FiveTasks(1);
  env["SLURMD_NODENAME"] = "gpu02";
  env["SLURM_LOCALID"] = "0";
  EXPECT_THAT(ErrorOf(env),
              HasSubstr("SLURMD_NODENAME=\"gpu02\": task 1 runs here, but the "
                        "block distribution"));
  env = FiveTasks(1);
  env["SLURM_LOCALID"] = "0";
  EXPECT_THAT(ErrorOf(env), HasSubstr("SLURM_LOCALID=\"0\": task 1 is local "
                                      "task 1 of gpu01"));
}

TEST(SlurmLayout, ParameterServersFirst) {
  StatusOr<SlurmStep> step = ReadSlurmStep(FiveTasks(2));
  ASSERT_TRUE(step.ok()) << step.status();
  StatusOr<SlurmLayout> layout = LayoutSlurmTasks(
      *step, {.ps = 2, .workers = 3, .base_port = 29500, .gpus_per_node = 0});
  ASSERT_TRUE(layout.ok()) << layout.status();
  ASSERT_EQ(layout->tasks.size(), 5u);
  EXPECT_EQ(layout->me().name(), "worker:0");
  EXPECT_EQ(layout->me().address(), "gpu02:29500");
  EXPECT_EQ(layout->Addresses(Role::kPs), "gpu01:29500,gpu01:29501");
  EXPECT_EQ(layout->Addresses(Role::kWorker),
            "gpu02:29500,gpu02:29501,gpu03:29500");
  EXPECT_EQ(layout->tasks[1].name(), "ps:1");
  EXPECT_EQ(layout->tasks[1].local_rank, 1);
  EXPECT_EQ(layout->tasks[4].node, 2);
  for (const SlurmTaskSlot& t : layout->tasks) EXPECT_FALSE(t.gpu);
}

TEST(SlurmLayout, GpusForWorkersOnly) {
  StatusOr<SlurmStep> step = ReadSlurmStep(FiveTasks(0));
  ASSERT_TRUE(step.ok()) << step.status();
  StatusOr<SlurmLayout> layout = LayoutSlurmTasks(
      *step, {.ps = 1, .workers = 4, .base_port = 40000, .gpus_per_node = 2});
  ASSERT_TRUE(layout.ok()) << layout.status();
  // gpu01: ps:0, worker:0; gpu02: worker:1, worker:2; gpu03: worker:3.
  EXPECT_FALSE(layout->tasks[0].gpu);
  EXPECT_EQ(layout->tasks[1].gpu, 0);
  EXPECT_EQ(layout->tasks[2].gpu, 0);
  EXPECT_EQ(layout->tasks[3].gpu, 1);
  EXPECT_EQ(layout->tasks[4].gpu, 0);
  // One GPU a node: the workers of a node share it.
  layout = LayoutSlurmTasks(
      *step, {.ps = 1, .workers = 4, .base_port = 40000, .gpus_per_node = 1});
  ASSERT_TRUE(layout.ok());
  EXPECT_EQ(layout->tasks[3].gpu, 0);
}

TEST(SlurmLayout, RefusesCountsThatDoNotFit) {
  StatusOr<SlurmStep> step = ReadSlurmStep(FiveTasks(0));
  ASSERT_TRUE(step.ok()) << step.status();
  StatusOr<SlurmLayout> layout =
      LayoutSlurmTasks(*step, {.ps = 1, .workers = 2, .base_port = 29500});
  ASSERT_FALSE(layout.ok());
  EXPECT_EQ(Message(layout.status()),
            "SLURM_NTASKS=\"5\": the run has 1 parameter servers and 2 "
            "workers (3 tasks)");
  layout = LayoutSlurmTasks(*step, {.ps = 1, .workers = 4, .base_port = 65535});
  ASSERT_FALSE(layout.ok());
  EXPECT_THAT(Message(layout.status()),
              HasSubstr("slurm.base_port: 65535 + 1 (local task on gpu01) "
                        "runs past port 65535"));
  layout = LayoutSlurmTasks(*step, {.ps = 1, .workers = 4, .base_port = 0});
  ASSERT_FALSE(layout.ok());
  EXPECT_THAT(Message(layout.status()), HasSubstr("slurm.base_port"));
}

}  // namespace
}  // namespace dtf::launch::slurm
