// A task of a Slurm run started again in a one-task step of its own takes
// the place its record gives it, not its own step's.
#include "lib/launch/slurm/step_record.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/launch/slurm/slurm_env.h"

namespace dtf::launch::slurm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(StepRecord, ReplacementTakesTheRecordedPlace) {
  // Task 3 of `srun -N3 -n5`: local task 1 of gpu02.
  const Environment first = {{"SLURM_PROCID", "3"},
                             {"SLURM_NTASKS", "5"},
                             {"SLURM_LOCALID", "1"},
                             {"SLURM_STEP_NODELIST", "gpu[01-03]"},
                             {"SLURM_STEP_TASKS_PER_NODE", "2(x2),1"},
                             {"SLURMD_NODENAME", "gpu02"}};
  StatusOr<SlurmStep> step = ReadSlurmStep(first);
  ASSERT_TRUE(step.ok()) << step.status();
  const std::string text = StepRecordText(*step);
  EXPECT_EQ(text,
            "SLURM_PROCID=3\nSLURM_NTASKS=5\nSLURM_LOCALID=1\n"
            "SLURM_STEP_NODELIST=gpu01,gpu02,gpu03\n"
            "SLURM_STEP_TASKS_PER_NODE=2,2,1\n");

  // Its replacement: the only task of `srun --overlap -N1 -n1 -w gpu02`.
  Environment again = {{"SLURM_PROCID", "0"},
                       {"SLURM_NTASKS", "1"},
                       {"SLURM_NPROCS", "1"},
                       {"SLURM_LOCALID", "0"},
                       {"SLURM_STEP_NODELIST", "gpu02"},
                       {"SLURM_JOB_NODELIST", "gpu[01-03]"},
                       {"SLURM_STEP_TASKS_PER_NODE", "1"},
                       {"SLURMD_NODENAME", "gpu02"}};
  ASSERT_TRUE(
      ApplyStepRecord(text, "/runs/r/worker-2/slurm-step", &again).ok());
  StatusOr<SlurmStep> replaced = ReadSlurmStep(again);
  ASSERT_TRUE(replaced.ok()) << replaced.status();
  EXPECT_EQ(replaced->procid, 3);
  EXPECT_EQ(replaced->ntasks, 5);
  EXPECT_EQ(replaced->localid, 1);
  EXPECT_THAT(replaced->nodes, ElementsAre("gpu01", "gpu02", "gpu03"));
  EXPECT_THAT(replaced->tasks_per_node, ElementsAre(2, 2, 1));
  StatusOr<SlurmLayout> layout =
      LayoutSlurmTasks(*replaced, {.ps = 1, .workers = 4, .base_port = 29500});
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_EQ(layout->me().name(), "worker:2");
  EXPECT_EQ(layout->me().address(), "gpu02:29501");
}

TEST(StepRecord, NamesTheFileAndLine) {
  Environment env;
  Status s = ApplyStepRecord("SLURM_PROCID=1\nPATH=/bin\n",
                             "/r/ps-0/slurm-step", &env);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(Message(s)),
              HasSubstr("/r/ps-0/slurm-step:2: expected one of SLURM_PROCID"));
  s = ApplyStepRecord("SLURM_PROCID=1\n", "/r/ps-0/slurm-step", &env);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(Message(s)),
              HasSubstr("/r/ps-0/slurm-step: no SLURM_NTASKS"));
  // Nothing is applied from a record that was refused.
  EXPECT_TRUE(env.empty());
}

}  // namespace
}  // namespace dtf::launch::slurm
