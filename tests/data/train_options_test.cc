#include "lib/data/train_options.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/data/job_file.h"
#include "tests/data/job_file_testing.h"

namespace dtf {
namespace {

// 5 lines: a schema and a deep numeric feature, which Inputs() makes wide
// too for wide_deep.
constexpr char kInputs[] = R"([schema]
label = "y"
columns = ["y:int", "f:float"]
[[features.numeric]]
name = "f"
)";

// 7 lines: inputs that a model of `type` takes.
std::string Inputs(const std::string& type) {
  return StrCat(kInputs, "wide = ", type == "wide_deep" ? "true" : "false",
                "\n\n");
}

class TrainSpecTest : public JobFileFixture {
 protected:
  // kInputs, a [model] of `type` (lines 8 and 9) and `train` (from line 10).
  TrainSpec Load(const std::string& type, const std::string& train) {
    StatusOr<JobFile> job = LoadText(
        StrCat(Inputs(type), "[model]\ntype = \"", type, "\"\n", train));
    EXPECT_TRUE(job.ok()) << job.status();
    return job.ok() ? job->train : TrainSpec();
  }
  std::string Error(const std::string& text) { return LoadError(text); }
  std::string Error(const std::string& type, const std::string& train) {
    return Error(
        StrCat(Inputs(type), "[model]\ntype = \"", type, "\"\n", train));
  }
};

TEST_F(TrainSpecTest, Defaults) {
  const TrainSpec wide_deep = Load("wide_deep", "");
  EXPECT_EQ(wide_deep.batch_size, 256);
  EXPECT_EQ(wide_deep.epochs, 1);
  EXPECT_EQ(wide_deep.steps, 0);
  EXPECT_EQ(wide_deep.shuffle_buffer, 10000);
  EXPECT_EQ(wide_deep.seed, 0);
  EXPECT_EQ(wide_deep.eval_every_steps, 0);
  EXPECT_EQ(wide_deep.log_every_steps, 100);
  EXPECT_EQ(wide_deep.checkpoint_every_steps, 0);
  EXPECT_EQ(wide_deep.keep_checkpoints, 3);
  EXPECT_FALSE(wide_deep.sharded_checkpoints);
  EXPECT_EQ(wide_deep.output_dir, dir_ + "/out");
  EXPECT_EQ(wide_deep.threads, 0);
  EXPECT_EQ(wide_deep.mode, TrainMode::kSync);
  EXPECT_FALSE(wide_deep.optimizer.has_value());
  ASSERT_TRUE(wide_deep.wide_optimizer.has_value());
  EXPECT_EQ(wide_deep.wide_optimizer->type, OptimizerType::kFtrl);
  EXPECT_EQ(wide_deep.wide_optimizer->learning_rate, 0.001);
  EXPECT_EQ(wide_deep.wide_optimizer->learning_rate_power, -0.5);
  EXPECT_EQ(wide_deep.wide_optimizer->initial_accumulator_value, 0.1);
  ASSERT_TRUE(wide_deep.deep_optimizer.has_value());
  EXPECT_EQ(wide_deep.deep_optimizer->type, OptimizerType::kAdagrad);
  EXPECT_EQ(wide_deep.deep_optimizer->epsilon, 1e-7);

  const TrainSpec linear = Load("linear", "[train]\n");
  ASSERT_TRUE(linear.optimizer.has_value());
  EXPECT_EQ(linear.optimizer->type, OptimizerType::kFtrl);
  EXPECT_FALSE(linear.wide_optimizer.has_value());
  const TrainSpec mlp = Load("mlp", "");
  ASSERT_TRUE(mlp.optimizer.has_value());
  EXPECT_EQ(mlp.optimizer->type, OptimizerType::kAdagrad);

  EXPECT_EQ(DefaultOptimizer(OptimizerType::kSgd).learning_rate, 0.01);
  EXPECT_EQ(DefaultOptimizer(OptimizerType::kAdam).learning_rate, 0.001);
  EXPECT_EQ(DefaultOptimizer(OptimizerType::kAdam).beta2, 0.999);
  EXPECT_EQ(TrainModeName(TrainMode::kAllreduce), "allreduce");
  EXPECT_EQ(OptimizerTypeName(OptimizerType::kFtrl), "ftrl");
}

TEST_F(TrainSpecTest, EveryKey) {
  const TrainSpec train = Load("mlp", R"([train]
batch_size = 32
steps = 500
shuffle_buffer = 0
seed = -7
eval_every_steps = 50
log_every_steps = 0
checkpoint_every_steps = 100
keep_checkpoints = 5
sharded_checkpoints = true
output_dir = "/abs/run"
threads = 4
device = "cuda:1"
mode = "allreduce"
[train.optimizer]
type = "sgd"
learning_rate = 0.1
momentum = 0.9
nesterov = true
)");
  EXPECT_EQ(train.batch_size, 32);
  EXPECT_EQ(train.steps, 500);
  EXPECT_EQ(train.epochs, 0);
  EXPECT_EQ(train.shuffle_buffer, 0);
  EXPECT_EQ(train.seed, -7);
  EXPECT_EQ(train.eval_every_steps, 50);
  EXPECT_EQ(train.log_every_steps, 0);
  EXPECT_EQ(train.checkpoint_every_steps, 100);
  EXPECT_EQ(train.keep_checkpoints, 5);
  EXPECT_TRUE(train.sharded_checkpoints);
  EXPECT_EQ(train.output_dir, "/abs/run");
  EXPECT_EQ(train.threads, 4);
  EXPECT_EQ(train.mode, TrainMode::kAllreduce);
  EXPECT_EQ(train.device, (DeviceName{true, 1}));
  ASSERT_TRUE(train.optimizer.has_value());
  EXPECT_EQ(train.optimizer->type, OptimizerType::kSgd);
  EXPECT_EQ(train.optimizer->learning_rate, 0.1);
  EXPECT_EQ(train.optimizer->momentum, 0.9);
  EXPECT_TRUE(train.optimizer->nesterov);

  const TrainSpec wide_deep = Load("wide_deep", R"([train]
epochs = 3
output_dir = "runs/a"
[train.wide_optimizer]
type = "ftrl"
learning_rate = 0.2
learning_rate_power = 0
initial_accumulator_value = 0
l1 = 0.5
l2 = 1
l2_shrinkage = 0.25
[train.deep_optimizer]
type = "adam"
beta1 = 0.5
beta2 = 0.9
epsilon = 1e-8
)");
  EXPECT_EQ(wide_deep.epochs, 3);
  EXPECT_EQ(wide_deep.output_dir, dir_ + "/runs/a");
  const OptimizerSpec& ftrl = *wide_deep.wide_optimizer;
  EXPECT_EQ(ftrl.learning_rate, 0.2);
  EXPECT_EQ(ftrl.learning_rate_power, 0);
  EXPECT_EQ(ftrl.initial_accumulator_value, 0);
  EXPECT_EQ(ftrl.l1, 0.5);
  EXPECT_EQ(ftrl.l2, 1);
  EXPECT_EQ(ftrl.l2_shrinkage, 0.25);
  const OptimizerSpec& adam = *wide_deep.deep_optimizer;
  EXPECT_EQ(adam.type, OptimizerType::kAdam);
  EXPECT_EQ(adam.learning_rate, 0.001);
  EXPECT_EQ(adam.beta1, 0.5);
  EXPECT_EQ(adam.beta2, 0.9);
  EXPECT_EQ(adam.epsilon, 1e-8);
}

TEST_F(TrainSpecTest, Errors) {
  EXPECT_EQ(Error("mlp", "[train]\nbatch_sise = 3\n"),
            "job.toml:11:1: train.batch_sise: unknown key (did you mean "
            "batch_size?)");
  EXPECT_EQ(Error("mlp", "[train]\nbatch_size = 0\n"),
            "job.toml:11:14: train.batch_size: must be at least 1, got 0");
  EXPECT_EQ(Error("mlp", "[train]\nbatch_size = 1048577\n"),
            "job.toml:11:14: train.batch_size: must be at most 1048576 (dtf's "
            "limit), got 1048577");
  EXPECT_EQ(Error("mlp", "[train]\nshuffle_buffer = 16777217\n"),
            "job.toml:11:18: train.shuffle_buffer: must be at most 16777216 "
            "(dtf's limit), got 16777217");
  EXPECT_EQ(Error("mlp", "[train]\nepochs = 2\nsteps = 10\n"),
            "job.toml:12:9: train.steps: give epochs or steps, not both");
  EXPECT_EQ(Error("mlp", "[train]\nsteps = 0\n"),
            "job.toml:11:9: train.steps: must be at least 1, got 0");
  EXPECT_EQ(Error("mlp", "[train]\nshuffle_buffer = -1\n"),
            "job.toml:11:18: train.shuffle_buffer: must be at least 0, got -1");
  EXPECT_EQ(
      Error("mlp", "[train]\nkeep_checkpoints = 0\n"),
      "job.toml:11:20: train.keep_checkpoints: must be at least 1, got 0");
  EXPECT_EQ(Error("mlp", "[train]\nmode = \"ps\"\n"),
            "job.toml:11:8: train.mode: expected one of sync, async, "
            "allreduce, got \"ps\"");
  EXPECT_EQ(Error("mlp", "[train]\ndevice = \"gpu\"\n"),
            "job.toml:11:10: train.device: \"gpu\" is not a device; expected "
            "\"cpu\", \"cuda\" or \"cuda:N\" (N from 0)");
  EXPECT_EQ(Error("mlp", "[train]\ndevice = \"cuda:x\"\n"),
            "job.toml:11:10: train.device: \"cuda:x\" is not a device; "
            "expected \"cpu\", \"cuda\" or \"cuda:N\" (N from 0)");
  EXPECT_EQ(Error("mlp", "[train]\noutput_dir = \"\"\n"),
            "job.toml:11:14: train.output_dir: empty path");
  EXPECT_EQ(Error("mlp", "[train]\nseed = 1.5\n"),
            "job.toml:11:8: train.seed: expected an integer, got 1.5");
  EXPECT_EQ(Error(Inputs("mlp") + "[train]\nepochs = 1\n"),
            "job.toml:8:1: train: needs a [model] table (the optimizers depend "
            "on the model type)");
}

TEST_F(TrainSpecTest, InputCache) {
  const TrainSpec defaults = Load("mlp", "");
  EXPECT_TRUE(defaults.input_cache);
  EXPECT_EQ(defaults.input_cache_memory_mb, 1024);
  EXPECT_EQ(defaults.input_cache_dir, "");
  const TrainSpec set = Load("mlp",
                             "[train]\ninput_cache = false\n"
                             "input_cache_memory_mb = 0\n"
                             "input_cache_dir = \"spill\"\n");
  EXPECT_FALSE(set.input_cache);
  EXPECT_EQ(set.input_cache_memory_mb, 0);
  EXPECT_EQ(set.input_cache_dir, dir_ + "/spill");
  EXPECT_EQ(Error("mlp", "[train]\ninput_cache = 1\n"),
            "job.toml:11:15: train.input_cache: expected true or false, got 1");
  EXPECT_EQ(Error("mlp", "[train]\ninput_cache_memory_mb = -1\n"),
            "job.toml:11:25: train.input_cache_memory_mb: must be at least 0, "
            "got -1");
  EXPECT_EQ(Error("mlp", "[train]\ninput_cache_memory_mb = 16777217\n"),
            "job.toml:11:25: train.input_cache_memory_mb: must be at most "
            "16777216 (dtf's limit), got 16777217");
  EXPECT_EQ(Error("mlp", "[train]\ninput_cache_dir = \"\"\n"),
            "job.toml:11:19: train.input_cache_dir: empty path");
}

TEST_F(TrainSpecTest, OptimizerErrors) {
  EXPECT_EQ(Error("wide_deep", "[train.optimizer]\ntype = \"sgd\"\n"),
            "job.toml:10:1: train.optimizer: a wide_deep model takes "
            "[train.wide_optimizer] and [train.deep_optimizer]");
  EXPECT_EQ(Error("mlp", "[train.deep_optimizer]\ntype = \"sgd\"\n"),
            "job.toml:10:1: train.deep_optimizer: an mlp model takes "
            "[train.optimizer]");
  EXPECT_EQ(Error("mlp", "[train]\noptimizer = \"adam\"\n"),
            "job.toml:11:13: train.optimizer: expected a table "
            "([train.optimizer]), got a string");
  EXPECT_EQ(Error("mlp", "[train.optimizer]\nlearning_rate = 0.1\n"),
            "job.toml:10:1: train.optimizer.type: missing (sgd, adagrad, adam "
            "or ftrl)");
  EXPECT_EQ(Error("mlp", "[train.optimizer]\ntype = \"adagrd\"\n"),
            "job.toml:11:8: train.optimizer.type: unknown value \"adagrd\" "
            "(did you mean adagrad?)");
  EXPECT_EQ(Error("mlp", "[train.optimizer]\ntype = \"adam\"\nbeta = 0.5\n"),
            "job.toml:12:1: train.optimizer.beta: unknown key (did you mean "
            "beta1?)");
  EXPECT_EQ(Error("mlp", "[train.optimizer]\ntype = \"adam\"\nl1 = 0.5\n"),
            "job.toml:12:1: train.optimizer.l1: not a setting of adam (it "
            "takes learning_rate, beta1, beta2, epsilon)");
  EXPECT_EQ(Error("mlp",
                  "[train.optimizer]\ntype = \"sgd\"\n"
                  "learning_rate = 0\n"),
            "job.toml:12:17: train.optimizer.learning_rate: must be > 0, got "
            "0");
  EXPECT_EQ(Error("mlp", "[train.optimizer]\ntype = \"adam\"\nbeta2 = 1\n"),
            "job.toml:12:9: train.optimizer.beta2: must be in [0, 1), got 1");
  EXPECT_EQ(Error("mlp",
                  "[train.optimizer]\ntype = \"ftrl\"\n"
                  "learning_rate_power = 0.5\n"),
            "job.toml:12:23: train.optimizer.learning_rate_power: must be <= "
            "0, got 0.5");
  EXPECT_EQ(Error("mlp", "[train.optimizer]\ntype = \"ftrl\"\nl2 = -1\n"),
            "job.toml:12:6: train.optimizer.l2: must be >= 0, got -1");
  EXPECT_EQ(Error("mlp",
                  "[train.optimizer]\ntype = \"adagrad\"\n"
                  "epsilon = 0\n"),
            "job.toml:12:11: train.optimizer.epsilon: must be > 0, got 0");
  EXPECT_EQ(Error("mlp",
                  "[train.optimizer]\ntype = \"sgd\"\n"
                  "nesterov = 1\n"),
            "job.toml:12:12: train.optimizer.nesterov: expected true or "
            "false, got 1");
}

TEST_F(TrainSpecTest, EarlyStopping) {
  EXPECT_FALSE(Load("mlp", "").early_stopping.has_value());
  const TrainSpec inline_table =
      Load("mlp",
           "[train]\nearly_stopping = { metric = \"pr_auc\", patience = 2 }\n");
  ASSERT_TRUE(inline_table.early_stopping.has_value());
  EXPECT_EQ(inline_table.early_stopping->metric, "pr_auc");
  EXPECT_EQ(inline_table.early_stopping->patience, 2);
  EXPECT_EQ(inline_table.early_stopping->min_delta, 0);
  const TrainSpec table =
      Load("wide_deep", "[train.early_stopping]\nmin_delta = 0.01\n");
  ASSERT_TRUE(table.early_stopping.has_value());
  EXPECT_EQ(table.early_stopping->metric, "loss");
  EXPECT_EQ(table.early_stopping->patience, 3);
  EXPECT_EQ(table.early_stopping->min_delta, 0.01);
  EXPECT_TRUE(HigherIsBetter("pr_auc"));
  EXPECT_FALSE(HigherIsBetter("loss"));
  EXPECT_FALSE(HigherIsBetter("rmse"));
}

TEST_F(TrainSpecTest, EarlyStoppingErrors) {
  EXPECT_EQ(Error("mlp", "[train]\nearly_stopping = true\n"),
            "job.toml:11:18: train.early_stopping: expected a table "
            "(early_stopping = { metric = \"loss\", patience = 3 }), got a "
            "boolean");
  EXPECT_EQ(Error("mlp", "[train]\nearly_stopping = { patience = 0 }\n"),
            "job.toml:11:31: train.early_stopping.patience: must be at least "
            "1, got 0");
  EXPECT_EQ(Error("mlp", "[train]\nearly_stopping = { min_delta = -1 }\n"),
            "job.toml:11:32: train.early_stopping.min_delta: must be >= 0, got "
            "-1");
  EXPECT_EQ(Error("mlp", "[train]\nearly_stopping = { metrc = \"auc\" }\n"),
            "job.toml:11:20: train.early_stopping.metrc: unknown key (did you "
            "mean metric?)");
  EXPECT_EQ(Error("mlp", "[train]\nearly_stopping = { metric = \"rmse\" }\n"),
            "job.toml:11:29: train.early_stopping.metric: \"rmse\" is not an "
            "evaluation metric of a binary_crossentropy model (it has loss, "
            "accuracy, auc, precision, recall, pr_auc)");
}

TEST_F(TrainSpecTest, WithoutAModelNothingButDefaults) {
  StatusOr<JobFile> job =
      LoadText("[data]\ncsv = [\"a.csv\"]\n[schema]\ncolumns = [\"a:int\"]\n");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_TRUE(job->features.empty());
  EXPECT_FALSE(job->model.has_value());
  EXPECT_FALSE(job->train.optimizer.has_value());
  EXPECT_FALSE(job->train.wide_optimizer.has_value());
  EXPECT_FALSE(job->train.deep_optimizer.has_value());
  EXPECT_EQ(job->train.output_dir, dir_ + "/out");
  EXPECT_EQ(job->train.epochs, 1);
}

}  // namespace
}  // namespace dtf

namespace dtf {
namespace {

TEST_F(TrainSpecTest, ClusterKeys) {
  TrainSpec d = Load("linear", "");
  EXPECT_EQ(d.replicas_to_aggregate, 0);
  EXPECT_EQ(d.max_staleness, -1);
  EXPECT_EQ(d.heartbeat_timeout, 10);
  EXPECT_EQ(d.coordinator_timeout, 60);
  EXPECT_EQ(d.collective_timeout, 300);
  TrainSpec t = Load("linear",
                     "[train]\nmode = \"async\"\nmax_staleness = 4\n"
                     "replicas_to_aggregate = 3\nheartbeat_timeout = 2\n"
                     "coordinator_timeout = 7\ncollective_timeout = 9\n");
  EXPECT_EQ(t.mode, TrainMode::kAsync);
  EXPECT_EQ(t.max_staleness, 4);
  EXPECT_EQ(t.replicas_to_aggregate, 3);
  EXPECT_EQ(t.heartbeat_timeout, 2);
  EXPECT_EQ(t.coordinator_timeout, 7);
  EXPECT_EQ(t.collective_timeout, 9);
  EXPECT_THAT(Error(StrCat(Inputs("linear"),
                           "[model]\ntype = \"linear\"\n[train]\n"
                           "max_staleness = 2\n")),
              ::testing::HasSubstr("job.toml:11:17: train.max_staleness: "
                                   "bounds staleness in async mode only"));
  EXPECT_THAT(Error(StrCat(Inputs("linear"),
                           "[model]\ntype = \"linear\"\n[train]\n"
                           "heartbeat_timeout = 0\n")),
              ::testing::HasSubstr("train.heartbeat_timeout"));
  EXPECT_THAT(Error(StrCat(Inputs("linear"),
                           "[model]\ntype = \"linear\"\n[train]\n"
                           "collective_timeout = 0\n")),
              ::testing::HasSubstr("train.collective_timeout"));
}

// A PS call's deadline: by default heartbeat_timeout + 30 s; one a sync
// step may spend waiting for a silent worker is refused.
TEST_F(TrainSpecTest, PsTimeout) {
  EXPECT_EQ(Load("linear", "").ps_timeout, 40);
  EXPECT_EQ(Load("linear", "[train]\nheartbeat_timeout = 5\n").ps_timeout, 35);
  EXPECT_EQ(Load("linear",
                 "[train]\nheartbeat_timeout = 1\n"
                 "ps_timeout = 2\n")
                .ps_timeout,
            2);
  EXPECT_THAT(Error(StrCat(Inputs("linear"),
                           "[model]\ntype = \"linear\"\n[train]\n"
                           "ps_timeout = 10\n")),
              ::testing::HasSubstr("job.toml:11:14: train.ps_timeout: must "
                                   "exceed train.heartbeat_timeout (10 s)"));
}

// The step-progress watchdog's window: by default long past any healthy
// step and past heartbeat_timeout; 0 turns it off; a window a sync worker
// may spend waiting for a silent one is refused.
TEST_F(TrainSpecTest, StallTimeout) {
  EXPECT_EQ(Load("linear", "").stall_timeout, 120);
  EXPECT_EQ(Load("linear", "[train]\nheartbeat_timeout = 30\n").stall_timeout,
            180);
  EXPECT_EQ(Load("linear", "[train]\nstall_timeout = 0\n").stall_timeout, 0);
  EXPECT_EQ(Load("linear",
                 "[train]\nheartbeat_timeout = 2\n"
                 "stall_timeout = 3\n")
                .stall_timeout,
            3);
  EXPECT_THAT(
      Error(StrCat(Inputs("linear"),
                   "[model]\ntype = \"linear\"\n[train]\n"
                   "stall_timeout = 10\n")),
      ::testing::HasSubstr("job.toml:11:17: train.stall_timeout: must exceed "
                           "train.heartbeat_timeout (10 s)"));
  EXPECT_THAT(Error(StrCat(Inputs("linear"),
                           "[model]\ntype = \"linear\"\n[train]\n"
                           "stall_timeout = -1\n")),
              ::testing::HasSubstr("train.stall_timeout"));
}

// --set overrides (dtf launch/serve) apply before the file is read.
TEST_F(TrainSpecTest, OverridesApplyBeforeTheFileIsRead) {
  const std::string path = Write("o.toml", StrCat(Inputs("linear"),
                                                  "[model]\ntype = \"linear\"\n"
                                                  "[train]\nbatch_size = 8\n"));
  StatusOr<JobFile> job =
      LoadJobFile(path, {"train.batch_size=64", "train.mode=async",
                         "train.seed=-3", "model.type=linear"});
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->train.batch_size, 64);
  EXPECT_EQ(job->train.mode, TrainMode::kAsync);
  EXPECT_EQ(job->train.seed, -3);
  // A bare word is a string.
  StatusOr<JobFile> bad = LoadJobFile(path, {"train.mode=fast"});
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(Message(bad.status())),
              ::testing::HasSubstr("train.mode"));
  for (const char* malformed : {"train", "=3", "train..x=1", ".a=1"}) {
    StatusOr<JobFile> r = LoadJobFile(path, {malformed});
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << malformed;
    EXPECT_THAT(std::string(Message(r.status())),
                ::testing::HasSubstr(StrCat("--set ", malformed)));
  }
  // Steps replace the file's epochs and epochs its steps: both say how long.
  const std::string epochs =
      Write("e.toml", StrCat(Inputs("linear"),
                             "[model]\ntype = \"linear\"\n"
                             "[train]\nepochs = 3\n"));
  StatusOr<JobFile> steps = LoadJobFile(epochs, {"train.steps=10"});
  ASSERT_TRUE(steps.ok()) << steps.status();
  EXPECT_EQ(steps->train.steps, 10);
  EXPECT_EQ(steps->train.epochs, 0);
  StatusOr<JobFile> back =
      LoadJobFile(epochs, {"train.steps=10", "train.epochs=2"});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->train.steps, 0);
  EXPECT_EQ(back->train.epochs, 2);
  StatusOr<JobFile> through = LoadJobFile(path, {"train.batch_size.x=1"});
  EXPECT_THAT(std::string(Message(through.status())),
              ::testing::HasSubstr("is not a table"));
}

}  // namespace
}  // namespace dtf
