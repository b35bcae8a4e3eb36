// The plan of a backend = "slurm" profile: what dtf launch --dry-run shows
// (text and --json, byte for byte), and what MakePlan refuses.
#include "lib/launch/slurm/slurm_plan.h"

#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/launch/plan.h"
#include "lib/launch/profile.h"
#include "lib/launch/run_tls.h"
#include "lib/launch/slurm/slurm_profile.h"
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
  EXPECT_EQ(slurm::SlurmPartOf(*back).batch_script,
            slurm::SlurmPartOf(*plan).batch_script);
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
  EXPECT_THAT(slurm::SlurmPartOf(*plan).batch_script,
              HasSubstr("#SBATCH --job-name=dtf-r1\n"));
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
  EXPECT_THAT(slurm::SlurmPartOf(*plan).batch_script, HasSubstr("  --tls\n"));
  EXPECT_EQ(PlaintextWarning(*plan, r->profile), "");
  StatusOr<RunTls> tls = MakeRunTls(*plan);
  ASSERT_TRUE(tls.ok()) << tls.status();
  ASSERT_EQ(tls->certs.count("ps-0"), 1u);

  r = SlurmRequest("tls = false\n");
  ASSERT_TRUE(r.ok()) << r.status();
  plan = MakePlan(*r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->tls);
  EXPECT_THAT(slurm::SlurmPartOf(*plan).batch_script, Not(HasSubstr("--tls")));
  EXPECT_THAT(PlaintextWarning(*plan, r->profile),
              HasSubstr("slurm.toml:1:7: tls = false: the run's secret and "
                        "every tensor cross the network in plaintext"));
}

// A batch plan (dtf predict --profile): workers only, each with its own
// command in the plan (what `dtf task slurm --batch` reads from plan.json),
// no TLS (the tasks talk to no one), and the script's srun runs every task
// as `dtf task slurm ... --batch`.
TEST(SlurmPlan, BatchPlanRunsEachTasksCommand) {
  StatusOr<PlanRequest> r = SlurmRequest();
  ASSERT_TRUE(r.ok()) << r.status();
  r->run_id = "r2";
  r->job = "/shared/model";
  r->batch_command = [](const TaskPlan& task, const std::string& binary,
                        const std::string& job) {
    return std::vector<std::string>{binary,         "predict",
                                    "--model",      job,
                                    "--shard",      std::to_string(task.index),
                                    "--output",     task.dir + "/out",
                                    "--ready-file", task.ready_file};
  };
  StatusOr<Plan> plan = MakePlan(*r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->batch);
  EXPECT_EQ(plan->ps, 0);
  ASSERT_EQ(plan->tasks.size(), 2u);
  EXPECT_FALSE(plan->tls);
  EXPECT_EQ(PlaintextWarning(*plan, r->profile), "");
  EXPECT_THAT(slurm::SlurmPartOf(*plan).batch_script,
              HasSubstr("#SBATCH --ntasks=2\n"));
  EXPECT_THAT(slurm::SlurmPartOf(*plan).batch_script,
              HasSubstr("  task \\\n  slurm \\\n  --job \\\n  "
                        "/shared/model \\\n"));
  EXPECT_THAT(slurm::SlurmPartOf(*plan).batch_script,
              HasSubstr("  --ps \\\n  0 \\\n  --workers \\\n  2 \\\n"));
  EXPECT_THAT(slurm::SlurmPartOf(*plan).batch_script, HasSubstr("  --batch\n"));
  EXPECT_THAT(slurm::SlurmPartOf(*plan).batch_script, Not(HasSubstr("--tls")));
  EXPECT_EQ(plan->tasks[1].argv,
            (std::vector<std::string>{
                "/opt/dtf/bin/dtf", "predict", "--model", "/shared/model",
                "--shard", "1", "--output", "/shared/runs/r2/worker-1/out",
                "--ready-file", "/shared/runs/r2/worker-1/ready"}));
  // What the tasks read back from plan.json.
  StatusOr<Plan> back = PlanFromJson(PlanToJson(*plan), "plan.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->batch);
  EXPECT_EQ(back->tasks[1].argv, plan->tasks[1].argv);
  // The text shows the script and each task's command.
  EXPECT_THAT(PlanToText(*plan), HasSubstr("/shared/runs/r2/worker-1/out"));
  // A profile's tls = true does not make a batch run's certificates.
  r = SlurmRequest("tls = true\n");
  ASSERT_TRUE(r.ok()) << r.status();
  r->batch_command = [](const TaskPlan&, const std::string& binary,
                        const std::string&) {
    return std::vector<std::string>{binary, "predict"};
  };
  plan = MakePlan(*r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->tls);
}

// With restarts the step's srun leaves the others running when a task
// fails (the launcher starts it again in a step of its own); without them
// it ends the step.
TEST(SlurmPlan, RestartsLeaveTheOtherTasksRunning) {
  StatusOr<PlanRequest> r = SlurmRequest("max_restarts = 2\n");
  ASSERT_TRUE(r.ok()) << r.status();
  r->job_checkpoint_every_steps = 10;
  StatusOr<Plan> plan = MakePlan(*r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->max_restarts, 2);
  const std::string& script = slurm::SlurmPartOf(*plan).batch_script;
  EXPECT_THAT(script, HasSubstr("--kill-on-bad-exit=0"));
  EXPECT_THAT(script, Not(HasSubstr("--kill-on-bad-exit=1")));
  // A restart needs a checkpoint to restore, as on the other backends.
  r->job_checkpoint_every_steps = 0;
  plan = MakePlan(*r);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(Message(plan.status())),
              HasSubstr("train.checkpoint_every_steps = 0"));

  r = SlurmRequest();
  ASSERT_TRUE(r.ok()) << r.status();
  plan = MakePlan(*r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(slurm::SlurmPartOf(*plan).batch_script,
              HasSubstr("--kill-on-bad-exit=1"));
}

TEST(SlurmPlan, RefusesRestartsInAllreduceRuns) {
  StatusOr<PlanRequest> r = SlurmRequest("max_restarts = 2\n");
  ASSERT_TRUE(r.ok()) << r.status();
  r->allreduce = true;
  StatusOr<Plan> plan = MakePlan(*r);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(Message(plan.status())),
              HasSubstr("slurm.toml:1:16: max_restarts = 2: an allreduce run "
                        "under Slurm restarts no rank"));
}

// max_workers above workers: the step holds every slot (the allocation
// is sized for them all), each task's `dtf task slurm` learns which are
// started, and the reserved ones wait in their places for dtf scale.
TEST(SlurmPlan, MaxWorkersReservesSlotsInTheStep) {
  StatusOr<PlanRequest> r = SlurmRequest("max_workers = 4\n");
  ASSERT_TRUE(r.ok()) << r.status();
  StatusOr<Plan> plan = MakePlan(*r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->workers, 4);
  EXPECT_EQ(plan->launch_workers, 2);
  ASSERT_EQ(plan->tasks.size(), 5u);
  EXPECT_FALSE(plan->Reserved(plan->tasks[2]));
  EXPECT_TRUE(plan->Reserved(plan->tasks[3]));
  EXPECT_TRUE(plan->Reserved(plan->tasks[4]));
  EXPECT_THAT(absl::StrJoin(plan->tasks[0].argv, " "),
              HasSubstr("--workers 4 --threads 2 --base-port 29500"));
  EXPECT_THAT(absl::StrJoin(plan->tasks[0].argv, " "),
              HasSubstr(" --started-workers 2"));
  EXPECT_THAT(slurm::SlurmPartOf(*plan).batch_script, HasSubstr("--ntasks=5"));
  // Parameter-server runs only, as on the other backends.
  r->allreduce = true;
  plan = MakePlan(*r);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(Message(plan.status())),
              HasSubstr("slurm.toml:1:15: max_workers = 4"));
}

TEST(SlurmPlan, TooFewSlotsNamesTheKey) {
  StatusOr<PlanRequest> r = SlurmRequest();
  ASSERT_TRUE(r.ok()) << r.status();
  slurm::MutableSlurmTable(&r->profile).tasks_per_node = 2;
  StatusOr<Plan> plan = MakePlan(*r);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(Message(plan.status())),
              HasSubstr("slurm.tasks_per_node"));
}

}  // namespace
}  // namespace dtf::launch
