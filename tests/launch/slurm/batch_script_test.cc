#include "lib/launch/slurm/batch_script.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dtf::launch::slurm {
namespace {

using ::testing::HasSubstr;

SlurmRunSpec Spec() {
  SlurmRunSpec spec;
  spec.binary = "/opt/dtf/bin/dtf";
  spec.job = "/shared/census/dtf.toml";
  spec.run_dir = "/shared/runs/20261125-101500-ab12";
  spec.run_id = "20261125-101500-ab12";
  spec.ps = 1;
  spec.workers = 2;
  return spec;
}

TEST(BatchScript, Minimal) {
  StatusOr<std::string> script = RenderBatchScript(SlurmProfile{}, Spec());
  ASSERT_TRUE(script.ok()) << script.status();
  EXPECT_EQ(*script, R"(#!/bin/bash
#SBATCH --job-name=dtf-20261125-101500-ab12
#SBATCH --ntasks=3
#SBATCH --output=/shared/runs/20261125-101500-ab12/slurm-%j.out
#SBATCH --error=/shared/runs/20261125-101500-ab12/slurm-%j.err
# dtf run 20261125-101500-ab12: 1 parameter server (task ids 0-0), then 2 workers (the first is the chief).
set -eu
exec \
  srun \
  --kill-on-bad-exit=1 \
  --distribution=block \
  --ntasks=3 \
  --job-name=dtf-20261125-101500-ab12 \
  /opt/dtf/bin/dtf \
  task \
  slurm \
  --job \
  /shared/census/dtf.toml \
  --run-dir \
  /shared/runs/20261125-101500-ab12 \
  --run-id \
  20261125-101500-ab12 \
  --ps \
  1 \
  --workers \
  2 \
  --threads \
  0 \
  --base-port \
  29500 \
  --gpus-per-node \
  0
)");
}

TEST(BatchScript, EveryOption) {
  SlurmProfile profile;
  profile.partition = "gpu";
  profile.account = "ml-team";
  profile.time_limit = "1-12:00:00";
  profile.nodes = 2;
  profile.tasks_per_node = 4;
  profile.gpus_per_node = 4;
  profile.constraint = "a100&ib";
  profile.sbatch_args = {"--qos=high", "--exclusive"};
  profile.srun_args = {"--cpu-bind=cores"};
  SlurmRunSpec spec = Spec();
  spec.ps = 2;
  spec.workers = 6;
  spec.base_port = 31000;
  spec.gpus_per_node = 4;
  spec.threads = 8;
  spec.sets = {"train.steps=100", "data.note=it's"};
  spec.resume = true;
  spec.tls = true;
  spec.metrics_out = "/shared/out/metrics.json";
  spec.env = {{"NCCL_DEBUG", "WARN"}, {"NOTE", "a b'c"}};
  StatusOr<std::string> script = RenderBatchScript(profile, spec);
  ASSERT_TRUE(script.ok()) << script.status();
  EXPECT_EQ(*script, R"(#!/bin/bash
#SBATCH --job-name=dtf-20261125-101500-ab12
#SBATCH --partition=gpu
#SBATCH --account=ml-team
#SBATCH --time=1-12:00:00
#SBATCH --nodes=2
#SBATCH --ntasks=8
#SBATCH --ntasks-per-node=4
#SBATCH --gpus-per-node=4
#SBATCH --constraint=a100&ib
#SBATCH --output=/shared/runs/20261125-101500-ab12/slurm-%j.out
#SBATCH --error=/shared/runs/20261125-101500-ab12/slurm-%j.err
#SBATCH --qos=high
#SBATCH --exclusive
# dtf run 20261125-101500-ab12: 2 parameter servers (task ids 0-1), then 6 workers (the first is the chief).
set -eu
export NCCL_DEBUG=WARN
export NOTE='a b'\''c'
exec \
  srun \
  --kill-on-bad-exit=1 \
  --distribution=block \
  --ntasks=8 \
  --job-name=dtf-20261125-101500-ab12 \
  --ntasks-per-node=4 \
  --cpu-bind=cores \
  /opt/dtf/bin/dtf \
  task \
  slurm \
  --job \
  /shared/census/dtf.toml \
  --run-dir \
  /shared/runs/20261125-101500-ab12 \
  --run-id \
  20261125-101500-ab12 \
  --ps \
  2 \
  --workers \
  6 \
  --threads \
  8 \
  --base-port \
  31000 \
  --gpus-per-node \
  4 \
  --set \
  train.steps=100 \
  --set \
  'data.note=it'\''s' \
  --restore \
  --tls \
  --metrics-out \
  /shared/out/metrics.json
)");
  // The same arguments give the same bytes.
  EXPECT_EQ(*RenderBatchScript(profile, spec), *script);
}

TEST(BatchScript, AllreduceHasNoParameterServers) {
  SlurmRunSpec spec = Spec();
  spec.ps = 0;
  spec.workers = 1;
  StatusOr<std::string> script = RenderBatchScript(SlurmProfile{}, spec);
  ASSERT_TRUE(script.ok()) << script.status();
  EXPECT_THAT(*script, HasSubstr("\n# dtf run 20261125-101500-ab12: 1 worker "
                                 "(the first is the chief).\n"));
  EXPECT_THAT(*script, HasSubstr("#SBATCH --ntasks=1\n"));
}

TEST(BatchScript, RefusesWhatDoesNotFit) {
  SlurmProfile profile;
  profile.nodes = 1;
  profile.tasks_per_node = 2;
  profile.where["slurm.tasks_per_node"] = "profiles/slurm.toml:7:18";
  StatusOr<std::string> script = RenderBatchScript(profile, Spec());
  ASSERT_FALSE(script.ok());
  EXPECT_EQ(Message(script.status()),
            "profiles/slurm.toml:7:18: slurm.tasks_per_node: 1 nodes of 2 "
            "tasks hold fewer than the run's 3 (1 ps + 2 workers); raise "
            "slurm.nodes or slurm.tasks_per_node");
  SlurmRunSpec spec = Spec();
  spec.run_dir = "/shared/my runs/x";
  script = RenderBatchScript(SlurmProfile{}, spec);
  ASSERT_FALSE(script.ok());
  EXPECT_THAT(Message(script.status()),
              HasSubstr("run directory \"/shared/my runs/x\": an #SBATCH line "
                        "cannot hold whitespace"));
}

}  // namespace
}  // namespace dtf::launch::slurm
