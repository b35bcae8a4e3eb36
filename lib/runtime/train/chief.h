// The chief's duties in a training run — the one process of `dtf train`, or
// worker 0 of a distributed run: it evaluates, keeps the best model
// (checkpoint-best.dtf, early stopping through EvalTracker), writes the
// checkpoint, TensorBoard events (distributed runs) and the export, and
// ends the run on its Coordinator. The model it reads comes from the
// Update (update.h), whichever way the variables are kept.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/data/train_options.h"
#include "lib/kernels/context.h"
#include "lib/runtime/checkpoint/checkpoint.h"
#include "lib/runtime/checkpoint/event_writer.h"
#include "lib/runtime/cluster/task_state.h"
#include "lib/runtime/model/feature_layer.h"
#include "lib/runtime/train/eval_tracker.h"
#include "lib/runtime/train/evaluator.h"
#include "lib/runtime/train/progress.h"
#include "lib/runtime/train/train_hooks.h"
#include "lib/runtime/train/train_types.h"
#include "lib/runtime/train/update.h"

namespace dtf::runtime {

class CoordinatorService;

struct ChiefOptions {
  std::string output_dir;
  // The job's model definition, kept in checkpoints and the export.
  std::string model_toml;
  // What evaluations read, and the split named in their reports.
  std::vector<std::string> eval_files;
  std::string eval_split;
  int64_t eval_batch_size = 1024;
  // The run's Coordinator service, or null (one process).
  CoordinatorService* coordinator = nullptr;
  // TensorBoard events, or null.
  std::unique_ptr<EventWriter> events;
  // Recorded in every checkpoint: the run and the job it is of.
  // The run goes on from a checkpoint: the best evaluation its earlier
  // part kept (checkpoint-best.dtf) is the one to beat, and the export is
  // the best of the whole run.
  bool resumed = false;
  CheckpointOrigin origin;
  // Checkpoint generations kept (train.keep_checkpoints).
  int64_t keep_checkpoints = 3;
  // train.sharded_checkpoints: with variables on parameter servers, each
  // generation is a sharded checkpoint (sharded_checkpoint.h) that every
  // PS writes its shard of; the chief writes only its training state.
  bool sharded_checkpoints = false;
  // How long a worker may stay silent before the chief stops waiting for
  // it (WaitForWorkers).
  std::chrono::seconds heartbeat_timeout{0};
  // How long after the chief's start a worker never heard from is still
  // waited for (train.coordinator_timeout: past it, the worker gives up
  // reaching the chief and exits).
  std::chrono::seconds start_timeout{0};
};

class Chief {
 public:
  // `layer` and `ctx` outlive the chief.
  Chief(const TrainSpec& train, ChiefOptions options,
        const kernels::Context& ctx, FeatureLayer* layer,
        const TrainHooks& hooks);

  CoordinatorService* coordinator() const { return options_.coordinator; }
  EventWriter* events() const { return options_.events.get(); }
  const EvalTracker& tracker() const { return tracker_; }
  // checkpoint.dtf, or with sharded checkpoints the prefix of the last one
  // written.
  const std::string& checkpoint_path() const { return checkpoint_path_; }
  // The step of the last evaluation; -1 before one.
  int64_t last_eval_step() const { return last_eval_step_; }

  // Evaluates the whole model at state.global_step, reports it through
  // `progress`, keeps it as the best model when it is, and says whether
  // early stopping ends training. Cancelled when the evaluation was.
  StatusOr<bool> Evaluate(Update& update, Progress& progress,
                          const TrainState& state, TrainResult* result);
  // The checkpoint (every variable and optimizer slot, and `state`; with a
  // Coordinator, every other worker's input position as last reported): a
  // new generation, which becomes checkpoint.dtf (checkpoint_files.h).
  Status WriteCheckpoint(Update& update, const TrainState& state) {
    return WriteCheckpointTo(update, state, "");
  }
  // Tells the Coordinator this worker is done at `step`.
  void Done(const std::string& self, int64_t step, const TrainResult& result);
  // Waits until every other worker finished or went silent for the
  // heartbeat timeout; Cancelled once the run is.
  Status WaitForWorkers(const std::string& self, Update& update);
  // Parameter-server runs: hands the input shards of workers taken for
  // dead on to live ones (CoordinatorService::HandOnInput), looking at
  // most every 200 ms unless `now`, with the positions the parameter
  // servers committed; says each.
  void HandOnInput(Update& update, bool now = false);
  // Whether input shards move in this run: a Coordinator, and an update
  // that commits positions per shard (parameter servers).
  bool HandsInputOn(const Update& update) const;
  // The chief's input has ended, in a parameter-server run: while other
  // workers still train it stays to read a shard handed on from one taken
  // for dead. True once `has_more` (a shard was handed on to the chief);
  // false once no other worker trains, or the run is cancelled.
  bool AwaitInput(const std::string& self, Update& update,
                  const std::function<bool()>& has_more);
  void SetRunState(RunState state, int64_t step);
  // Ends the run: the checkpoint, the best evaluation in `result`, the
  // export of the best model, the events closed, the Coordinator told.
  Status Finish(Update& update, const TrainState& state, TrainResult* result);

 private:
  // To `path`, or ("") as a new generation.
  Status WriteCheckpointTo(Update& update, const TrainState& state,
                           const std::string& path);
  // A new generation as a sharded checkpoint (chief_sharded.cc): the
  // shards of every PS, then the chief's (`cut` less the PS steps, which
  // the shards' are), committed.
  Status WriteShardedCheckpoint(Update& update, TrainState cut);
  // Where `update` commits input positions, the positions it committed
  // for the variables just pulled (or saved) replace the workers' reports
  // in `cut`, the chief's own too.
  static void TakeCommittedPositions(const Update& update, TrainState* cut);
  // Whether the variables stay on parameter servers that write their own
  // shards (train.sharded_checkpoints with a sharded() update).
  bool ShardedRun(const Update& update) const {
    return options_.sharded_checkpoints && update.sharded();
  }
  // The best model of a sharded run (chief_sharded.cc): the directory
  // checkpoint-best/ replaced by one whose bundle `model` every PS writes
  // its variables' shard of (no optimizer slots), the chief's shard
  // holding `state`, the best evaluation and the normalizer.
  Status WriteShardedBest(Update& update, const TrainState& state);
  // The export of a sharded run: from checkpoint-best/ when the best
  // evaluation was not the last, else written by the PS now
  // (sharded_export.h); no task gathers the model.
  Status ExportSharded(Update& update, const std::string& dir);
  // For a resumed run: the best evaluation checkpoint-best.dtf keeps, when
  // it is of this job, becomes the tracker's best (a note says so, or why
  // it is not kept).
  void RestoreBest();

  ChiefOptions options_;
  const kernels::Context& ctx_;
  FeatureLayer* layer_;
  const TrainHooks& hooks_;
  EvalTracker tracker_;
  // The evaluation split's inputs, kept from one evaluation to the next
  // within train.input_cache_memory_mb (with train.input_cache).
  EvalInputCache eval_cache_;
  std::string checkpoint_path_;
  const std::string best_path_;
  // The prefix of a sharded run's best model (checkpoint-best/model).
  const std::string sharded_best_;
  // When HandOnInput last looked.
  std::chrono::steady_clock::time_point handed_on_at_;
  int64_t last_eval_step_ = -1;
};

}  // namespace dtf::runtime
