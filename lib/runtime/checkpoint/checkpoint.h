// Checkpoints (docs/formats/checkpoint.md).
//
// A checkpoint is one bundle file holding everything training needs to go on
// where it stopped: every variable, every optimizer slot, the normalizer
// statistics, the global step and the input position. The variables and
// normalizer statistics alone (MakeModelBundle) are what an exported model
// keeps (lib/runtime/export/exported_model.h).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/data/input_pipeline.h"
#include "lib/kernels/optimizer.h"
#include "lib/runtime/checkpoint/bundle.h"
#include "lib/runtime/model/feature_layer.h"
#include "lib/runtime/model/model.h"

namespace dtf::runtime {

inline constexpr std::string_view kCheckpointFile = "checkpoint.dtf";
// The checkpoint of the best evaluation so far
// (lib/runtime/train/eval_tracker.h), written beside kCheckpointFile; the
// export comes from it.
inline constexpr std::string_view kBestCheckpointFile = "checkpoint-best.dtf";

// Entries that tie a checkpoint to its run (checkpoint_files.h).
inline constexpr std::string_view kCheckpointRunIdEntry = "meta/run_id";
inline constexpr std::string_view kCheckpointFingerprintEntry =
    "meta/job_fingerprint";
inline constexpr std::string_view kCheckpointPsStepsEntry =
    "train/ps_global_steps";
// Distributed runs: every worker's input position, 4 numbers a worker.
inline constexpr std::string_view kCheckpointWorkerPositionsEntry =
    "train/worker_input_positions";
// The records each position had yielded of its epoch (InputPosition's
// emitted): the chief's, and one a worker. Absent: not known (-1).
inline constexpr std::string_view kCheckpointInputEmittedEntry =
    "train/input_emitted";
inline constexpr std::string_view kCheckpointWorkerEmittedEntry =
    "train/worker_input_emitted";

// The `count` numbers of records yielded in `entry` of `bundle`, -1 each
// where the checkpoint does not hold the entry; DataLoss naming the file
// for a malformed one.
StatusOr<std::vector<int64_t>> ReadCheckpointEmitted(const Bundle& bundle,
                                                     std::string_view entry,
                                                     size_t count);

struct TrainState {
  int64_t global_step = 0;
  // The chief's input position (worker 0's in a distributed run).
  InputPosition position;
  // Parameter-server runs: the global step of each PS's shard as pulled
  // for the checkpoint (all equal: a consistent cut); empty otherwise.
  std::vector<int64_t> ps_steps;
  // Distributed runs: the input position of worker i at index i — the
  // chief's own, and each other worker's as it last reported it before the
  // variables were pulled (nullopt: not reported); empty otherwise.
  std::vector<std::optional<InputPosition>> worker_positions;
};

// The run that writes a checkpoint: its id ("" for `dtf train`) and
// CheckpointFingerprint (checkpoint_files.h) of its job.
struct CheckpointOrigin {
  std::string run_id;
  std::string job_fingerprint;
};

// The names a checkpoint gives a variable's values ("var/<name>"), one of
// its optimizer slots ("slot/<name>/<slot>") and its optimizer's update
// count ("slot/<name>/step").
std::string CheckpointVariableKey(std::string_view variable);
std::string CheckpointSlotKey(std::string_view variable, std::string_view slot);
std::string CheckpointStepKey(std::string_view variable);
inline constexpr std::string_view kCheckpointGlobalStepEntry =
    "train/global_step";

// The entries of a checkpoint that are not variables or optimizer slots:
// the model definition, `origin`, the training state and the normalizer
// statistics (what the chief writes of a sharded checkpoint).
Bundle MakeCheckpointState(const FeatureLayer& layer, const TrainState& state,
                           std::string_view model_toml,
                           const CheckpointOrigin& origin = {});

// `states` is parallel to model.variables() (entries of untrainable
// variables are ignored). `model_toml` is recorded for reference.
Bundle MakeCheckpoint(const FeatureLayer& layer, const Model& model,
                      const std::vector<kernels::OptimizerState>& states,
                      const TrainState& state, std::string_view model_toml,
                      const CheckpointOrigin& origin = {});

// Restores what MakeCheckpoint saved into objects built for the same job.
// FailedPrecondition naming the checkpoint and the variable when a variable
// or slot is missing or has another shape (the job changed since).
Status RestoreCheckpoint(const Bundle& bundle, FeatureLayer* layer,
                         Model* model,
                         std::vector<kernels::OptimizerState>* states,
                         TrainState* state);

// One tensor of a checkpoint: the values of `variable` (slot empty) or one
// of its optimizer slots, which must have `shape`. FailedPrecondition naming
// the checkpoint and the variable otherwise. For a parameter server that
// restores its partition.
StatusOr<kernels::Tensor> ReadCheckpointTensor(const Bundle& bundle,
                                               std::string_view variable,
                                               std::string_view slot,
                                               std::span<const int64_t> shape);
// The global step (variable empty) or the optimizer's update count of
// `variable`.
StatusOr<int64_t> ReadCheckpointStep(const Bundle& bundle,
                                     std::string_view variable);

// The variables of `model` and the normalizer statistics of `layer`, under
// the names a checkpoint gives them, without optimizer slots or training
// state.
Bundle MakeModelBundle(const FeatureLayer& layer, const Model& model);

// Restores the normalizer statistics and the variables of a checkpoint or
// of MakeModelBundle's bundle into `layer` and `model` (built for the same
// job). FailedPrecondition naming the bundle and the variable as
// RestoreCheckpoint.
Status RestoreModelBundle(const Bundle& bundle, FeatureLayer* layer,
                          Model* model);
// The normalizer statistics alone (none needed: OK).
Status RestoreNormalizerStats(const Bundle& bundle, FeatureLayer* layer);

}  // namespace dtf::runtime
