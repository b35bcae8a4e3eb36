// The job file's [train] table (docs/job-file.md): how to train, and the
// optimizers, as plain configuration for the trainer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/device_name.h"
#include "lib/base/status.h"
#include "lib/data/model_options.h"

namespace dtf {

// How a cluster trains (DESIGN.md, Runtime): sync (aggregate each step's
// gradients), async (apply on arrival), allreduce (no parameter servers). A
// single process ignores it.
enum class TrainMode { kSync, kAsync, kAllreduce };
std::string_view TrainModeName(TrainMode mode);  // "sync", "async", ...

enum class OptimizerType { kSgd, kAdagrad, kAdam, kFtrl };
std::string_view OptimizerTypeName(OptimizerType type);  // "sgd", ...

// One optimizer, with Keras' hyperparameters and defaults. Only the fields of
// `type` are read from the file; the others keep their defaults and mean
// nothing.
struct OptimizerSpec {
  OptimizerType type = OptimizerType::kSgd;
  // learning_rate (> 0). Default: sgd 0.01, adagrad, adam and ftrl 0.001.
  double learning_rate = 0.01;
  // sgd: momentum (>= 0), default 0; nesterov, default false.
  double momentum = 0;
  bool nesterov = false;
  // adagrad and ftrl: initial_accumulator_value (>= 0), default 0.1.
  double initial_accumulator_value = 0.1;
  // adagrad and adam: epsilon (> 0), default 1e-7.
  double epsilon = 1e-7;
  // adam: beta1 and beta2, each in [0, 1); defaults 0.9 and 0.999.
  double beta1 = 0.9;
  double beta2 = 0.999;
  // ftrl: learning_rate_power (<= 0), default -0.5; l1, l2 and l2_shrinkage
  // regularization strengths (>= 0), default 0 (Keras'
  // l1_regularization_strength, l2_regularization_strength,
  // l2_shrinkage_regularization_strength).
  double learning_rate_power = -0.5;
  double l1 = 0;
  double l2 = 0;
  double l2_shrinkage = 0;
};

// An optimizer of `type` with every default (its learning rate included).
OptimizerSpec DefaultOptimizer(OptimizerType type);

// The evaluation metrics of a model trained with `loss`, in the order the
// evaluator reports them (lib/runtime/train/evaluator.h): binary_crossentropy
// loss, accuracy, auc, precision, recall, pr_auc; softmax_crossentropy loss,
// accuracy; squared_error loss, rmse.
std::vector<std::string_view> EvalMetricNames(Loss loss);
// Whether a larger value of metric `name` is better (loss and rmse: no).
bool HigherIsBetter(std::string_view name);

// [train.early_stopping]: training stops once the evaluation metric has not
// improved for `patience` evaluations in a row. The metric also picks the
// best checkpoint (checkpoint-best.dtf, which the export comes from).
struct EarlyStoppingSpec {
  // metric: one of EvalMetricNames(the model's loss). Default: "loss".
  std::string metric = "loss";
  // patience (>= 1): evaluations in a row without improvement that stop
  // training. Default: 3.
  int64_t patience = 3;
  // min_delta (>= 0): the least change of the metric, in its better
  // direction, that counts as an improvement. Default: 0.
  double min_delta = 0;
};

struct TrainSpec {
  // batch_size (>= 1): examples per step per worker. Default: 256.
  int64_t batch_size = 256;
  // epochs (>= 1) or steps (>= 1), exactly one; the other is 0. Default:
  // epochs = 1.
  int64_t epochs = 1;
  int64_t steps = 0;
  // shuffle_buffer (>= 0): examples in the shuffle buffer; 0: no shuffling.
  // Default: 10000.
  int64_t shuffle_buffer = 10000;
  // seed for shuffling, initialization and dropout. Default: 0 (runs repeat).
  int64_t seed = 0;
  // input_cache: each reader keeps the parsed rows of its shard as the first
  // epoch reads them, and later epochs take them from there instead of
  // reading, decompressing and parsing the records again; the batches are
  // the same (docs/input-pipeline.md). Default: true.
  bool input_cache = true;
  // input_cache_memory_mb (>= 0): MiB of cached rows kept in memory per
  // reader; the rest goes to a spill file on local disk. Default: 1024.
  int64_t input_cache_memory_mb = 1024;
  // input_cache_dir: where the spill file goes (removed at the end); resolved
  // against the job file's directory. Default: "" ($TMPDIR or /tmp).
  std::string input_cache_dir;
  // eval_every_steps (>= 0): evaluate on the eval split every N steps; 0:
  // after each epoch. Default: 0.
  int64_t eval_every_steps = 0;
  // log_every_steps (>= 0): log loss and throughput every N steps; 0: only
  // at the end of each epoch. Default: 100.
  int64_t log_every_steps = 100;
  // checkpoint_every_steps (>= 0): checkpoint every N steps; 0: at the end
  // only. Default: 0.
  int64_t checkpoint_every_steps = 0;
  // keep_checkpoints (>= 1): checkpoint generations kept in output_dir
  // (checkpoint-<step>.dtf, the newest also as checkpoint.dtf); older ones
  // are removed once a newer one is written. Default: 3.
  int64_t keep_checkpoints = 3;
  // sharded_checkpoints: in a parameter-server run, every PS writes its own
  // shard of each checkpoint in TensorFlow's sharded tensor-bundle layout
  // (model.ckpt-<step>.data-0000k-of-0000n and one merged .index) and the
  // chief writes only its training state, instead of the chief gathering
  // the whole model into checkpoint.dtf. Other modes ignore it. Default:
  // false.
  bool sharded_checkpoints = false;
  // output_dir: checkpoints, events and the exported model; resolved against
  // the job file's directory. Default: "out".
  std::string output_dir;
  // threads (>= 0): compute threads per process; 0: one per core. Default: 0.
  int64_t threads = 0;
  // device: where workers (and `dtf train`) compute: "cpu", "cuda" or
  // "cuda:N"; parameter servers always compute on the CPU. A profile's
  // device wins over it. Default: "cpu".
  DeviceName device;
  // mode. Default: sync. "allreduce" runs without parameter servers: every
  // worker holds the whole model on its device and gradients are averaged
  // over NCCL (device = "cuda") or Gloo (device = "cpu").
  TrainMode mode = TrainMode::kSync;
  // replicas_to_aggregate (>= 0): sync mode applies a step once this many
  // workers pushed gradients for it (fewer than the workers: the rest are
  // backups, their late gradients dropped as stale); 0: every live worker.
  // Default: 0.
  int64_t replicas_to_aggregate = 0;
  // max_staleness (>= 0, async only): gradients computed more than this many
  // updates ago are dropped; -1 (the default, no key): unbounded.
  int64_t max_staleness = -1;
  // heartbeat_timeout (>= 1, seconds): a worker silent this long is taken
  // for dead; sync steps stop waiting for it. Default: 10.
  int64_t heartbeat_timeout = 10;
  // coordinator_timeout (>= 1, seconds): a task that cannot reach the chief
  // for this long exits on its own. Default: 60.
  int64_t coordinator_timeout = 60;
  // collective_timeout (>= 1, seconds; allreduce mode): an NCCL call
  // (joining the communicator, a step's all-reduce, the agreement before a
  // step) not done within this fails the run, its peer taken for lost or
  // hung. Every rank waits in the agreement while the chief evaluates or
  // checkpoints, so it must exceed the longest of those. Default: 300.
  int64_t collective_timeout = 300;
  // overlap_communication (allreduce mode, CPU): each gradient bucket's
  // average starts, on a communication thread, as soon as the backward pass
  // has finished its variables, instead of after the whole backward pass.
  // The averages and the model are the same either way. Default: true.
  bool overlap_communication = true;
  // ps_timeout (> heartbeat_timeout, seconds; parameter-server modes): a
  // worker's call to a PS (a step's push and pull, a pull for an
  // evaluation or checkpoint) not answered within this is given up and
  // made again once every PS answers (within coordinator_timeout), as
  // after a PS lost. A sync step may wait heartbeat_timeout for a silent
  // worker, so it must exceed that. Default: heartbeat_timeout + 30.
  int64_t ps_timeout = 40;
  // stall_timeout (0, or > heartbeat_timeout; seconds): the chief's
  // step-progress watchdog takes a worker (other than itself) whose steps
  // have not advanced this long — while its heartbeats keep coming — for
  // dead: it is told to exit, then restarted or dropped as the mode allows
  // (an allreduce run fails). 0 turns the watchdog off. Default:
  // DefaultStallTimeout(heartbeat_timeout).
  int64_t stall_timeout = 120;
  // [train.early_stopping]; absent: train every epoch or step asked for (the
  // best checkpoint is still kept, by the eval loss).
  std::optional<EarlyStoppingSpec> early_stopping;
  // [train.optimizer]: the optimizer of a linear or mlp model. Absent table:
  // ftrl for linear, adagrad for mlp (TF's LinearClassifier and
  // DNNClassifier). Set exactly when the model is linear or mlp.
  std::optional<OptimizerSpec> optimizer;
  // [train.wide_optimizer] and [train.deep_optimizer]: the optimizers of a
  // wide_deep model's two parts. Absent tables: ftrl and adagrad (TF's
  // DNNLinearCombinedClassifier). Set exactly when the model is wide_deep.
  std::optional<OptimizerSpec> wide_optimizer;
  std::optional<OptimizerSpec> deep_optimizer;
};

// The stall_timeout of a job that sets none: max(120, 6 x heartbeat_timeout)
// seconds, long past any healthy step.
inline int64_t DefaultStallTimeout(int64_t heartbeat_timeout) {
  return heartbeat_timeout * 6 > 120 ? heartbeat_timeout * 6 : 120;
}

namespace toml_util {
class Reader;
struct Table;
}  // namespace toml_util

// Internal to lib/data (LoadJobFile): reads the [train] table (`table`, or
// nullptr when the file has none: every default) into `*train`, with
// output_dir resolved against `dir`. `model` is the [model] table's result,
// or nullptr when the file has none: then no optimizer is set, and a [train]
// table is an error (its optimizers depend on the model type). Errors are
// InvalidArgument
// "<file>:<line>:<col>: train.<key>: what is wrong".
Status ParseTrainSpec(toml_util::Reader& r, const toml_util::Table* table,
                      const ModelSpec* model, const std::string& dir,
                      TrainSpec* train);

}  // namespace dtf
