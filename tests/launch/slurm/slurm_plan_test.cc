// The plan of a backend = "slurm" profile: what dtf launch --dry-run shows
// (text and --json, byte for byte), and what MakePlan refuses.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/launch/plan.h"
#include "lib/launch/profile.h"
#include "lib/launch/run_tls.h"
#include "tests/testing/paths.h"
#include "tests/testing/temp_dir.h"

namespace dtf::launch {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kSlurmProfile[] = R"(backend = "slurm"
ps = 1
workers = 2
threads = 2

[slurm]
partition = "cpu"
time_limit = "00:30:00"
nodes = 1
run_dir = "/shared/runs"

[env]
OMP_NUM_THREADS = "1"
)";

StatusOr<PlanRequest> SlurmRequest(std::string extra = "") {
  PlanRequest r;
  r.job = "/shared/census/dtf.toml";
  r.binary = "/opt/dtf/bin/dtf";
  DTF_ASSIGN_OR_RETURN(
      r.profile, ParseProfile(StrCat(extra, kSlurmProfile),
                              "/shared/census/profiles/slurm.toml", "slurm"));
  r.overrides.sets = {"train.steps=100"};
  return r;
}

std::string Golden(const char* name) {
  return testing::ReadFile(
      StrCat(DTF_SOURCE_DIR, "/tests/launch/testdata/", name));
}

TEST(SlurmPlan, GoldenJsonAndText) {
  StatusOr<PlanRequest> r = SlurmRequest();
  ASSERT_TRUE(r.ok()) << r.status();
  StatusOr<Plan> plan = MakePlan(*r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(PlanToJson(*plan), Golden("slurm_plan.json"));
  EXPECT_EQ(PlanToText(*plan), Golden("slurm_plan.txt"));
  // The same request gives the same bytes, and plan.json reads back.
  EXPECT_EQ(PlanToJson(*MakePlan(*r)), PlanToJson(*plan));
  StatusOr<Plan> back = PlanFromJson(PlanToJson(*plan), "plan.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(PlanToJson(*back), PlanToJson(*plan));
  EXPECT_EQ(back->batch_script, plan->batch_script);
}

TEST(SlurmPlan, RunDirUnderSlurmRunDir) {
  StatusOr<PlanRequest> r = SlurmRequest();
  ASSERT_TRUE(r.ok()) << r.status();
  r->run_id = "r1";
  StatusOr<Plan> plan = MakePlan(*r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->run_dir, "/shared/runs/r1");
  EXPECT_EQ(plan->secret_file, "/shared/runs/r1/secret");
  EXPECT_EQ(plan->chief().ready_file, "/shared/runs/r1/worker-0/ready");
  EXPECT_THAT(plan->batch_script, HasSubstr("#SBATCH --job-name=dtf-r1\n"));
  EXPECT_TRUE(plan->tls);
  // --runs-dir wins over slurm.run_dir.
  r->runs_dir = "/elsewhere/runs";
  EXPECT_EQ(MakePlan(*r)->run_dir, "/elsewhere/runs/r1");
}

// TLS is on unless the profile turns it off; its certificates name the
// tasks (Slurm places them after they are made), which the tasks check.
TEST(SlurmPlan, TlsByTaskNameUnlessTurnedOff) {
  StatusOr<PlanRequest> r = SlurmRequest();
  ASSERT_TRUE(r.ok()) << r.status();
  StatusOr<Plan> plan = MakePlan(*r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->tls);
  EXPECT_THAT(plan->batch_script, HasSubstr("  --tls\n"));
  EXPECT_EQ(PlaintextWarning(*plan, r->profile), "");
  StatusOr<RunTls> tls = MakeRunTls(*plan);
  ASSERT_TRUE(tls.ok()) << tls.status();
  ASSERT_EQ(tls->certs.count("ps-0"), 1u);

  r = SlurmRequest("tls = false\n");
  ASSERT_TRUE(r.ok()) << r.status();
  plan = MakePlan(*r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->tls);
  EXPECT_THAT(plan->batch_script, Not(HasSubstr("--tls")));
  EXPECT_THAT(PlaintextWarning(*plan, r->profile),
              HasSubstr("slurm.toml:1:7: tls = false: the run's secret and "
                        "every tensor cross the network in plaintext"));
}

TEST(SlurmPlan, RefusesRestarts) {
  StatusOr<PlanRequest> r = SlurmRequest("max_restarts = 2\n");
  ASSERT_TRUE(r.ok()) << r.status();
  r->job_checkpoint_every_steps = 10;
  StatusOr<Plan> plan = MakePlan(*r);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(Message(plan.status())),
              HasSubstr("max_restarts = 2: Slurm runs restart no task"));
}

TEST(SlurmPlan, TooFewSlotsNamesTheKey) {
  StatusOr<PlanRequest> r = SlurmRequest();
  ASSERT_TRUE(r.ok()) << r.status();
  r->profile.slurm.tasks_per_node = 2;
  StatusOr<Plan> plan = MakePlan(*r);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(Message(plan.status())),
              HasSubstr("slurm.tasks_per_node"));
}

}  // namespace
}  // namespace dtf::launch
