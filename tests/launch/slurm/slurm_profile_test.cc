#include "lib/launch/slurm/slurm_profile.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/launch/plan.h"
#include "lib/launch/profile.h"
#include "lib/launch/slurm/slurm_plan.h"

namespace dtf::launch::slurm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string ErrorOf(std::string_view text) {
  StatusOr<Profile> p = ParseProfile(text, "profiles/slurm.toml", "slurm");
  EXPECT_FALSE(p.ok()) << text;
  if (p.ok()) return "";
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  return std::string(Message(p.status()));
}

TEST(SlurmProfile, Defaults) {
  StatusOr<Profile> p =
      ParseProfile("backend = \"slurm\"\n", "profiles/slurm.toml", "slurm");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->backend, BackendKind::kSlurm);
  const SlurmProfile& s = SlurmTableOf(*p);
  EXPECT_EQ(s.partition, "");
  EXPECT_EQ(s.time_limit, "");
  EXPECT_EQ(s.nodes, 0);
  EXPECT_EQ(s.tasks_per_node, 0);
  EXPECT_EQ(s.gpus_per_node, 0);
  EXPECT_EQ(s.base_port, 29500);
  EXPECT_EQ(s.run_dir, "");
  EXPECT_TRUE(s.sbatch_args.empty());
}

TEST(SlurmProfile, ReadsEveryKey) {
  StatusOr<Profile> p =
      ParseProfile(R"(backend = "slurm"
ps = 2
workers = 6
threads = 4
[slurm]
partition = "gpu"
account = "ml-team"
time_limit = "1-12:00:00"
nodes = 2
tasks_per_node = 4
gpus_per_node = 4
constraint = "a100&ib"
sbatch_args = ["--qos=high", "--exclusive"]
srun_args = ["--cpu-bind=cores"]
base_port = 31000
run_dir = "../shared/runs"
[env]
NCCL_DEBUG = "WARN"
)",
                   "/jobs/census/profiles/slurm.toml", "slurm");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->ps, 2);
  EXPECT_EQ(p->workers, 6);
  EXPECT_EQ(p->env.at("NCCL_DEBUG"), "WARN");
  const SlurmProfile& s = SlurmTableOf(*p);
  EXPECT_EQ(s.partition, "gpu");
  EXPECT_EQ(s.account, "ml-team");
  EXPECT_EQ(s.time_limit, "1-12:00:00");
  EXPECT_EQ(s.nodes, 2);
  EXPECT_EQ(s.tasks_per_node, 4);
  EXPECT_EQ(s.gpus_per_node, 4);
  EXPECT_EQ(s.constraint, "a100&ib");
  EXPECT_THAT(s.sbatch_args, ElementsAre("--qos=high", "--exclusive"));
  EXPECT_THAT(s.srun_args, ElementsAre("--cpu-bind=cores"));
  EXPECT_EQ(s.base_port, 31000);
  EXPECT_EQ(s.run_dir, "/jobs/census/shared/runs");
  EXPECT_EQ(s.where.at("slurm.nodes"), "/jobs/census/profiles/slurm.toml:9:9");
}

TEST(SlurmProfile, TimeLimitFormats) {
  for (const char* ok :
       {"30", "0:30", "30:00", "1:00:00", "100:00:00", "2-0", "2-12", "2-12:30",
        "2-12:30:15", "UNLIMITED", "INFINITE", "90"}) {
    EXPECT_TRUE(ValidateSlurmTimeLimit(ok).ok()) << ok;
  }
  for (const char* bad :
       {"", "0", "00:00:00", "1:60", "1:00:60", "1-24", "1-1:60", "1:2:3:4",
        "1h", "-1", "1-", "-1:00", "1::00", " 30", "1-2-3", "unlimited"}) {
    EXPECT_FALSE(ValidateSlurmTimeLimit(bad).ok()) << bad;
  }
  EXPECT_EQ(ErrorOf("backend = \"slurm\"\n[slurm]\ntime_limit = \"2h\"\n"),
            "profiles/slurm.toml:3:14: slurm.time_limit: \"2h\": expected "
            "minutes (\"30\"), \"MM:SS\", \"HH:MM:SS\", \"D-HH\", \"D-HH:MM\", "
            "\"D-HH:MM:SS\" or \"UNLIMITED\"");
  EXPECT_THAT(ErrorOf("backend = \"slurm\"\n[slurm]\ntime_limit = \"1:75\"\n"),
              HasSubstr("profiles/slurm.toml:3:14: slurm.time_limit: \"1:75\": "
                        "a field out of range"));
}

TEST(SlurmProfile, RefusesUnknownKeysAndWrongTypes) {
  EXPECT_EQ(ErrorOf("backend = \"slurm\"\n[slurm]\npartiton = \"gpu\"\n"),
            "profiles/slurm.toml:3:1: slurm.partiton: unknown key (did you "
            "mean partition?)");
  EXPECT_EQ(ErrorOf("backend = \"slurm\"\n[slurm]\nnodes = \"2\"\n"),
            "profiles/slurm.toml:3:9: slurm.nodes: expected an integer, got "
            "\"2\"");
  EXPECT_THAT(ErrorOf("backend = \"slurm\"\n[slurm]\nnodes = 0\n"),
              HasSubstr("profiles/slurm.toml:3:9: slurm.nodes: must be at "
                        "least 1"));
  EXPECT_THAT(ErrorOf("backend = \"slurm\"\n[slurm]\nbase_port = 80\n"),
              HasSubstr("profiles/slurm.toml:3:13: slurm.base_port:"));
  EXPECT_EQ(ErrorOf("backend = \"slurm\"\n[slurm]\nsbatch_args = \"--x\"\n"),
            "profiles/slurm.toml:3:15: slurm.sbatch_args: expected an array "
            "of strings, got a string");
  EXPECT_EQ(ErrorOf("backend = \"slurm\"\n[slurm]\nsrun_args = [\"-c2\", 3]\n"),
            "profiles/slurm.toml:3:21: slurm.srun_args[1]: expected a string, "
            "got an integer");
  EXPECT_THAT(ErrorOf("backend = \"slurm\"\n[slurm]\nsrun_args = [\"x\"]\n"),
              HasSubstr("3:14: slurm.srun_args[0]: expected an option such as "
                        "\"--qos=high\", got \"x\""));
  EXPECT_EQ(ErrorOf("backend = \"slurm\"\n[slurm]\npartition = \"a b\"\n"),
            "profiles/slurm.toml:3:13: slurm.partition: expected one word, "
            "got \"a b\"");
  EXPECT_EQ(ErrorOf("backend = \"slurm\"\nslurm = 3\n"),
            "profiles/slurm.toml:2:9: slurm: expected a table, got an integer");
}

TEST(SlurmProfile, RefusesOtherBackendsKeys) {
  EXPECT_EQ(ErrorOf("backend = \"slurm\"\nbase_port = 3000\n"),
            "profiles/slurm.toml:2:1: base_port: not for backend = \"slurm\" "
            "(set slurm.base_port)");
  EXPECT_EQ(ErrorOf("backend = \"slurm\"\ngpus = 2\n"),
            "profiles/slurm.toml:2:1: gpus: not for backend = \"slurm\" (set "
            "slurm.gpus_per_node)");
  EXPECT_THAT(ErrorOf("backend = \"slurm\"\nhosts = [\"a\"]\n"),
              HasSubstr("2:1: hosts: not for backend = \"slurm\" (Slurm "
                        "chooses the nodes"));
  EXPECT_EQ(ErrorOf("backend = \"slurm\"\nworkrs = 2\n"),
            "profiles/slurm.toml:2:1: workrs: unknown key (did you mean "
            "workers?)");
  // A [slurm] table in another backend's profile.
  EXPECT_THAT(ErrorOf("backend = \"local\"\n[slurm]\nnodes = 2\n"),
              HasSubstr("profiles/slurm.toml:2:2: slurm: unknown key"));
}

TEST(SlurmProfile, DefaultsPlanAJob) {
  StatusOr<Profile> p =
      ParseProfile("backend = \"slurm\"\n", "profiles/slurm.toml", "slurm");
  ASSERT_TRUE(p.ok()) << p.status();
  PlanRequest r;
  r.job = "/jobs/census/dtf.toml";
  r.binary = "/usr/bin/dtf";
  r.profile = *p;
  StatusOr<Plan> plan = MakePlan(r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->backend, BackendKind::kSlurm);
  EXPECT_EQ(plan->run_dir, "/jobs/census/.dtf/runs/<run-id>");
  EXPECT_THAT(SlurmPartOf(*plan).batch_script,
              HasSubstr("#SBATCH --ntasks=3\n"));
  EXPECT_EQ(plan->tasks.size(), 3u);
  EXPECT_EQ(plan->tasks[1].argv, plan->tasks[0].argv);
}

}  // namespace
}  // namespace dtf::launch::slurm
