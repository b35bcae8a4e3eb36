#include "lib/data/train_options.h"

#include <toml++/toml.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "lib/base/strings.h"
#include "lib/base/toml_util.h"
#include "lib/data/job_limits.h"

namespace dtf {

std::string_view TrainModeName(TrainMode mode) {
  static constexpr std::string_view kNames[] = {"sync", "async", "allreduce"};
  return kNames[static_cast<int>(mode)];
}

std::string_view OptimizerTypeName(OptimizerType type) {
  static constexpr std::string_view kNames[] = {"sgd", "adagrad", "adam",
                                                "ftrl"};
  return kNames[static_cast<int>(type)];
}

OptimizerSpec DefaultOptimizer(OptimizerType type) {
  OptimizerSpec o;
  o.type = type;
  o.learning_rate = type == OptimizerType::kSgd ? 0.01 : 0.001;
  return o;
}

std::vector<std::string_view> EvalMetricNames(Loss loss) {
  switch (loss) {
    case Loss::kBinaryCrossentropy:
      return {"loss", "accuracy", "auc", "precision", "recall", "pr_auc"};
    case Loss::kSoftmaxCrossentropy:
      return {"loss", "accuracy"};
    case Loss::kSquaredError:
      return {"loss", "rmse"};
  }
  return {"loss"};
}

bool HigherIsBetter(std::string_view name) {
  return name != "loss" && name != "rmse";
}

namespace {

using toml_util::Reader;

// The keys each optimizer type takes besides type and learning_rate.
std::vector<std::string_view> TypeKeys(OptimizerType type) {
  switch (type) {
    case OptimizerType::kSgd:
      return {"momentum", "nesterov"};
    case OptimizerType::kAdagrad:
      return {"initial_accumulator_value", "epsilon"};
    case OptimizerType::kAdam:
      return {"beta1", "beta2", "epsilon"};
    case OptimizerType::kFtrl:
      return {"learning_rate_power", "initial_accumulator_value", "l1", "l2",
              "l2_shrinkage"};
  }
  return {};
}

// Reads the optional number `name` of `t` into *out and checks `ok` on it;
// `range` describes the allowed values for the message.
template <typename Ok>
Status ReadChecked(Reader& r, const toml::table& t, const std::string& path,
                   std::string_view name, std::string_view range, Ok ok,
                   double* out) {
  DTF_RETURN_IF_ERROR(r.ReadFinite(t, path, name, out));
  if (t.contains(name) && !ok(*out)) {
    return r.Error(
        *t.get(name), StrCat(path, ".", name),
        StrCat("must be ", range, ", got ", toml_util::Text(*t.get(name))));
  }
  return OkStatus();
}

StatusOr<OptimizerSpec> ParseOptimizer(Reader& r, const toml::node& node,
                                       const std::string& path) {
  const toml::table* t = node.as_table();
  if (t == nullptr) {
    return r.Error(node, path,
                   StrCat("expected a table ([", path, "]), got ",
                          toml_util::Describe(node)));
  }
  r.Remember(path, node);
  DTF_RETURN_IF_ERROR(
      r.CheckKeys(*t, path,
                  {"type", "learning_rate", "momentum", "nesterov",
                   "initial_accumulator_value", "epsilon", "beta1", "beta2",
                   "learning_rate_power", "l1", "l2", "l2_shrinkage"}));
  const toml::node* type = t->get("type");
  if (type == nullptr) {
    return r.Error(*t, path + ".type", "missing (sgd, adagrad, adam or ftrl)");
  }
  DTF_ASSIGN_OR_RETURN(
      const int type_index,
      r.GetChoice(*type, path + ".type", {"sgd", "adagrad", "adam", "ftrl"}));
  OptimizerSpec o = DefaultOptimizer(static_cast<OptimizerType>(type_index));
  const std::vector<std::string_view> own = TypeKeys(o.type);
  std::string own_text = "learning_rate";
  for (std::string_view k : own) StrAppend(&own_text, ", ", k);
  for (const auto& [key, value] : toml_util::InFileOrder(*t)) {
    const std::string_view name = key->str();
    if (name == "type" || name == "learning_rate" ||
        std::find(own.begin(), own.end(), name) != own.end()) {
      continue;
    }
    return r.Error(key->source(), StrCat(path, ".", name),
                   StrCat("not a setting of ", OptimizerTypeName(o.type),
                          " (it takes ", own_text, ")"));
  }
  auto positive = [](double v) { return v > 0; };
  auto non_negative = [](double v) { return v >= 0; };
  auto below_one = [](double v) { return v >= 0 && v < 1; };
  auto non_positive = [](double v) { return v <= 0; };
  DTF_RETURN_IF_ERROR(ReadChecked(r, *t, path, "learning_rate", "> 0", positive,
                                  &o.learning_rate));
  DTF_RETURN_IF_ERROR(
      ReadChecked(r, *t, path, "momentum", ">= 0", non_negative, &o.momentum));
  DTF_RETURN_IF_ERROR(r.ReadBool(*t, path, "nesterov", &o.nesterov));
  DTF_RETURN_IF_ERROR(ReadChecked(r, *t, path, "initial_accumulator_value",
                                  ">= 0", non_negative,
                                  &o.initial_accumulator_value));
  DTF_RETURN_IF_ERROR(
      ReadChecked(r, *t, path, "epsilon", "> 0", positive, &o.epsilon));
  DTF_RETURN_IF_ERROR(
      ReadChecked(r, *t, path, "beta1", "in [0, 1)", below_one, &o.beta1));
  DTF_RETURN_IF_ERROR(
      ReadChecked(r, *t, path, "beta2", "in [0, 1)", below_one, &o.beta2));
  DTF_RETURN_IF_ERROR(ReadChecked(r, *t, path, "learning_rate_power", "<= 0",
                                  non_positive, &o.learning_rate_power));
  DTF_RETURN_IF_ERROR(
      ReadChecked(r, *t, path, "l1", ">= 0", non_negative, &o.l1));
  DTF_RETURN_IF_ERROR(
      ReadChecked(r, *t, path, "l2", ">= 0", non_negative, &o.l2));
  DTF_RETURN_IF_ERROR(ReadChecked(r, *t, path, "l2_shrinkage", ">= 0",
                                  non_negative, &o.l2_shrinkage));
  return o;
}

StatusOr<EarlyStoppingSpec> ParseEarlyStopping(Reader& r,
                                               const toml::node& node,
                                               const ModelSpec& model) {
  const std::string path = "train.early_stopping";
  const toml::table* t = node.as_table();
  if (t == nullptr) {
    return r.Error(node, path,
                   StrCat("expected a table (early_stopping = { metric = "
                          "\"loss\", patience = 3 }), got ",
                          toml_util::Describe(node)));
  }
  r.Remember(path, node);
  DTF_RETURN_IF_ERROR(
      r.CheckKeys(*t, path, {"metric", "patience", "min_delta"}));
  EarlyStoppingSpec e;
  if (const toml::node* n = t->get("metric")) {
    DTF_ASSIGN_OR_RETURN(e.metric, r.GetString(*n, path + ".metric"));
    const std::vector<std::string_view> names = EvalMetricNames(model.loss);
    if (std::find(names.begin(), names.end(), e.metric) == names.end()) {
      std::string list;
      for (std::string_view name : names) {
        StrAppend(&list, list.empty() ? "" : ", ", name);
      }
      return r.Error(
          *n, path + ".metric",
          StrCat("\"", e.metric, "\" is not an evaluation metric of a ",
                 LossName(model.loss), " model (it has ", list, ")"));
    }
  }
  DTF_RETURN_IF_ERROR(r.ReadInt(*t, path, "patience", 1, &e.patience));
  DTF_RETURN_IF_ERROR(ReadChecked(
      r, *t, path, "min_delta", ">= 0", [](double v) { return v >= 0; },
      &e.min_delta));
  return e;
}

// The optimizer tables the model type takes, and their defaults.
Status ReadOptimizers(Reader& r, const toml::table* t, const ModelSpec& model,
                      TrainSpec* train) {
  const bool wide_deep = model.type == ModelType::kWideDeep;
  for (std::string_view name :
       {"optimizer", "wide_optimizer", "deep_optimizer"}) {
    const toml::node* n = t != nullptr ? t->get(name) : nullptr;
    if (n != nullptr && (name == "optimizer") == wide_deep) {
      return r.Error(
          *n, StrCat("train.", name),
          wide_deep
              ? "a wide_deep model takes "
                "[train.wide_optimizer] and "
                "[train.deep_optimizer]"
              : StrCat(model.type == ModelType::kMlp ? "an mlp" : "a linear",
                       " model takes [train.optimizer]"));
    }
  }
  auto read = [&](std::string_view name, OptimizerType default_type,
                  std::optional<OptimizerSpec>* out) -> Status {
    const toml::node* n = t != nullptr ? t->get(name) : nullptr;
    if (n == nullptr) {
      *out = DefaultOptimizer(default_type);
      return OkStatus();
    }
    DTF_ASSIGN_OR_RETURN(*out, ParseOptimizer(r, *n, StrCat("train.", name)));
    return OkStatus();
  };
  if (wide_deep) {
    DTF_RETURN_IF_ERROR(
        read("wide_optimizer", OptimizerType::kFtrl, &train->wide_optimizer));
    return read("deep_optimizer", OptimizerType::kAdagrad,
                &train->deep_optimizer);
  }
  return read("optimizer",
              model.type == ModelType::kLinear ? OptimizerType::kFtrl
                                               : OptimizerType::kAdagrad,
              &train->optimizer);
}

// The loop's schedule: batch size, epochs or steps, shuffling, how often to
// evaluate, log and checkpoint, and where the output goes.
Status ReadSchedule(Reader& r, const toml::table& t, const std::string& dir,
                    TrainSpec* train) {
  DTF_RETURN_IF_ERROR(r.ReadIntInRange(t, "train", "batch_size", 1,
                                       kMaxBatchSize, &train->batch_size));
  if (t.contains("epochs") && t.contains("steps")) {
    return r.Error(*t.get("steps"), "train.steps",
                   "give epochs or steps, not both");
  }
  DTF_RETURN_IF_ERROR(r.ReadInt(t, "train", "epochs", 1, &train->epochs));
  DTF_RETURN_IF_ERROR(r.ReadInt(t, "train", "steps", 1, &train->steps));
  if (train->steps > 0) train->epochs = 0;
  DTF_RETURN_IF_ERROR(r.ReadIntInRange(t, "train", "shuffle_buffer", 0,
                                       kMaxShuffleBuffer,
                                       &train->shuffle_buffer));
  DTF_RETURN_IF_ERROR(r.ReadInt(
      t, "train", "seed", std::numeric_limits<int64_t>::min(), &train->seed));
  DTF_RETURN_IF_ERROR(
      r.ReadBool(t, "train", "input_cache", &train->input_cache));
  DTF_RETURN_IF_ERROR(r.ReadIntInRange(t, "train", "input_cache_memory_mb", 0,
                                       kMaxInputCacheMemoryMb,
                                       &train->input_cache_memory_mb));
  if (const toml::node* n = t.get("input_cache_dir")) {
    DTF_ASSIGN_OR_RETURN(const std::string d,
                         r.GetString(*n, "train.input_cache_dir"));
    if (d.empty()) return r.Error(*n, "train.input_cache_dir", "empty path");
    train->input_cache_dir = toml_util::ResolvePath(dir, d);
  }
  DTF_RETURN_IF_ERROR(
      r.ReadInt(t, "train", "eval_every_steps", 0, &train->eval_every_steps));
  DTF_RETURN_IF_ERROR(
      r.ReadInt(t, "train", "log_every_steps", 0, &train->log_every_steps));
  DTF_RETURN_IF_ERROR(r.ReadInt(t, "train", "checkpoint_every_steps", 0,
                                &train->checkpoint_every_steps));
  DTF_RETURN_IF_ERROR(
      r.ReadInt(t, "train", "keep_checkpoints", 1, &train->keep_checkpoints));
  DTF_RETURN_IF_ERROR(r.ReadBool(t, "train", "sharded_checkpoints",
                                 &train->sharded_checkpoints));
  if (const toml::node* n = t.get("output_dir")) {
    DTF_ASSIGN_OR_RETURN(const std::string out,
                         r.GetString(*n, "train.output_dir"));
    if (out.empty()) return r.Error(*n, "train.output_dir", "empty path");
    train->output_dir = toml_util::ResolvePath(dir, out);
  }
  return OkStatus();
}

// Where and how the steps run: threads, device, and the update mode with
// its settings.
Status ReadExecution(Reader& r, const toml::table& t, TrainSpec* train) {
  DTF_RETURN_IF_ERROR(r.ReadInt(t, "train", "threads", 0, &train->threads));
  if (const toml::node* n = t.get("device")) {
    DTF_ASSIGN_OR_RETURN(const std::string device,
                         r.GetString(*n, "train.device"));
    StatusOr<DeviceName> parsed = ParseDeviceName(device);
    if (!parsed.ok())
      return r.Error(*n, "train.device", Message(parsed.status()));
    train->device = *parsed;
  }
  if (const toml::node* n = t.get("mode")) {
    DTF_ASSIGN_OR_RETURN(
        const int mode,
        r.GetChoice(*n, "train.mode", {"sync", "async", "allreduce"}));
    train->mode = static_cast<TrainMode>(mode);
  }
  DTF_RETURN_IF_ERROR(r.ReadInt(t, "train", "replicas_to_aggregate", 0,
                                &train->replicas_to_aggregate));
  DTF_RETURN_IF_ERROR(
      r.ReadInt(t, "train", "max_staleness", 0, &train->max_staleness));
  if (t.contains("max_staleness") && train->mode != TrainMode::kAsync) {
    return r.Error(*t.get("max_staleness"), "train.max_staleness",
                   "bounds staleness in async mode only; set mode = "
                   "\"async\"");
  }
  return OkStatus();
}

// The timeouts of a distributed run, each checked against the heartbeat
// timeout it must exceed.
Status ReadTimeouts(Reader& r, const toml::table& t, TrainSpec* train) {
  DTF_RETURN_IF_ERROR(
      r.ReadInt(t, "train", "heartbeat_timeout", 1, &train->heartbeat_timeout));
  DTF_RETURN_IF_ERROR(r.ReadInt(t, "train", "coordinator_timeout", 1,
                                &train->coordinator_timeout));
  DTF_RETURN_IF_ERROR(r.ReadInt(t, "train", "collective_timeout", 1,
                                &train->collective_timeout));
  DTF_RETURN_IF_ERROR(r.ReadBool(t, "train", "overlap_communication",
                                 &train->overlap_communication));
  train->ps_timeout = train->heartbeat_timeout + 30;
  DTF_RETURN_IF_ERROR(
      r.ReadInt(t, "train", "ps_timeout", 1, &train->ps_timeout));
  if (train->ps_timeout <= train->heartbeat_timeout) {
    return r.Error(*t.get("ps_timeout"), "train.ps_timeout",
                   StrCat("must exceed train.heartbeat_timeout (",
                          train->heartbeat_timeout,
                          " s): a sync step may wait that long for a "
                          "silent worker"));
  }
  train->stall_timeout = DefaultStallTimeout(train->heartbeat_timeout);
  DTF_RETURN_IF_ERROR(
      r.ReadInt(t, "train", "stall_timeout", 0, &train->stall_timeout));
  if (train->stall_timeout > 0 &&
      train->stall_timeout <= train->heartbeat_timeout) {
    return r.Error(
        *t.get("stall_timeout"), "train.stall_timeout",
        StrCat("must exceed train.heartbeat_timeout (",
               train->heartbeat_timeout,
               " s): a sync worker may wait that long for a silent one "
               "(or 0 turns the watchdog off)"));
  }
  return OkStatus();
}

}  // namespace

Status ParseTrainSpec(toml_util::Reader& r, const toml_util::Table* table,
                      const ModelSpec* model, const std::string& dir,
                      TrainSpec* train) {
  train->output_dir = toml_util::ResolvePath(dir, "out");
  if (table == nullptr) {
    return model != nullptr ? ReadOptimizers(r, nullptr, *model, train)
                            : OkStatus();
  }
  const toml::table& t = table->table;
  r.Remember("train", t);
  if (model == nullptr) {
    return r.Error(t, "train",
                   "needs a [model] table (the optimizers depend on the "
                   "model type)");
  }
  DTF_RETURN_IF_ERROR(r.CheckKeys(t, "train",
                                  {"batch_size",
                                   "epochs",
                                   "steps",
                                   "shuffle_buffer",
                                   "seed",
                                   "input_cache",
                                   "input_cache_memory_mb",
                                   "input_cache_dir",
                                   "eval_every_steps",
                                   "log_every_steps",
                                   "checkpoint_every_steps",
                                   "keep_checkpoints",
                                   "sharded_checkpoints",
                                   "output_dir",
                                   "threads",
                                   "device",
                                   "mode",
                                   "replicas_to_aggregate",
                                   "max_staleness",
                                   "heartbeat_timeout",
                                   "coordinator_timeout",
                                   "collective_timeout",
                                   "overlap_communication",
                                   "ps_timeout",
                                   "stall_timeout",
                                   "optimizer",
                                   "wide_optimizer",
                                   "deep_optimizer",
                                   "early_stopping"}));
  DTF_RETURN_IF_ERROR(ReadSchedule(r, t, dir, train));
  DTF_RETURN_IF_ERROR(ReadExecution(r, t, train));
  DTF_RETURN_IF_ERROR(ReadTimeouts(r, t, train));
  if (const toml::node* n = t.get("early_stopping")) {
    DTF_ASSIGN_OR_RETURN(train->early_stopping,
                         ParseEarlyStopping(r, *n, *model));
  }
  return ReadOptimizers(r, &t, *model, train);
}

}  // namespace dtf
