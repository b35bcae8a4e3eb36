// The training loop of every mode — one process (trainer.cc), a
// parameter-server worker (worker.cc), an allreduce worker
// (allreduce_worker.cc): next batch, transform, stage, forward, loss,
// backward, update; with the cadence of progress reports, evaluations
// (every eval_every_steps, else after each epoch; and at the end),
// checkpoints (every checkpoint_every_steps, on cancel, at the end), early
// stopping and cancellation. How the gradients reach the variables is the
// Update's (update.h); what only the chief does is the Chief's (chief.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "lib/base/status.h"
#include "lib/data/input_pipeline.h"
#include "lib/data/model_options.h"
#include "lib/kernels/context.h"
#include "lib/runtime/model/feature_layer.h"
#include "lib/runtime/model/model.h"
#include "lib/runtime/train/chief.h"
#include "lib/runtime/train/sharded_input.h"
#include "lib/runtime/train/train_hooks.h"
#include "lib/runtime/train/train_types.h"
#include "lib/runtime/train/update.h"

namespace dtf::runtime {

struct TrainLoopOptions {
  // "worker:<i>" in a distributed run, for messages and the Coordinator;
  // empty for one process.
  std::string name;
  Loss loss = Loss::kBinaryCrossentropy;
  // Training ends once the global step reaches this; 0: when the data runs
  // out.
  int64_t max_steps = 0;
  // The step this loop's cadence counts from: a resumed run's global step
  // for one process; 0 for a worker, which counts its own steps.
  int64_t first_step = 0;
  // Where the input starts (its epoch is the one under way).
  InputPosition start;
  // 0: a report after each epoch (and at the end).
  int64_t log_every_steps = 0;
  // 0: an evaluation after each epoch.
  int64_t eval_every_steps = 0;
  // 0: checkpoints only on cancel and at the end.
  int64_t checkpoint_every_steps = 0;
  // The chief evaluates.
  bool evaluate = true;
  // Checkpoints keep this loop's input position as the chief's (one
  // process, or worker 0): a resumed run reads on from there. The other
  // workers' positions reach the chief's checkpoints through their
  // heartbeats (TrainHooks::on_step).
  bool record_position = false;
  // TrainResult::loss is the last epoch's mean loss (Progress::epoch_loss)
  // rather than the loss last reported or of the last epoch, whichever is
  // later (Progress::loss).
  bool loss_of_last_epoch = false;
  // Set once the chief stopped training early (other workers of a
  // parameter-server run): the loop ends as when the data runs out.
  const std::atomic<bool>* end_training = nullptr;
};

// What the loop runs on; every pointer outlives the call.
struct TrainLoopParts {
  const kernels::Context* ctx = nullptr;
  const FeatureLayer* layer = nullptr;
  Model* model = nullptr;
  InputPipeline* input = nullptr;
  // A worker's own input shard (its index), which `input` reads, and how
  // to open another that the chief hands on to it (ShardedInput); without
  // `open_shard` the loop reads `input` alone.
  int own_shard = 0;
  ShardedInput::Open open_shard;
  Update* update = nullptr;
  // Null on a worker that is not the chief.
  Chief* chief = nullptr;
};

// Trains until the data runs out, max_steps, early stopping, the chief's
// end_training, or a cancel (hooks.cancel, or any rank's in a collective
// update): then Cancelled, the chief writing its checkpoint first. A
// collective update's failed Agree or Apply (a peer lost or hung) ends it
// the same way with that error, "<name>: stopped at step N: <error>" (a
// cancel if hooks.cancel is set: the run is being stopped); the
// chief writes no checkpoint of variables the failure left part-way
// through a step (Update::consistent). The
// chief's result holds the final evaluation and the paths it wrote; other
// workers' only their own figures.
StatusOr<TrainResult> RunTrainLoop(const TrainLoopOptions& options,
                                   const TrainHooks& hooks,
                                   const TrainLoopParts& parts);

}  // namespace dtf::runtime
