// The trainer core: trains a job's model on its training shards in one
// process, evaluating, checkpointing and exporting as the job's [train]
// table says. `dtf train` runs it; distributed workers run the same step.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "lib/base/status.h"
#include "lib/data/job_file.h"
#include "lib/runtime/train/train_types.h"

namespace dtf::runtime {

struct TrainOptions {
  // Overrides of the job's [train] values; 0 keeps the job's. Setting
  // `steps` trains that many steps (epochs then repeat as needed); setting
  // `epochs` trains that many epochs.
  int64_t batch_size = 0;
  int64_t steps = 0;
  int64_t epochs = 0;
  // Compute threads; 0 keeps the job's train.threads (0 there: one per
  // core).
  int threads = 0;
  // Evaluate (every eval_every_steps, after each epoch and at the end).
  // Default: true.
  bool eval = true;
  // Go on from <output_dir>/checkpoint.dtf when it exists. False starts
  // afresh (the old checkpoint is replaced). Default: true.
  bool resume = true;
  // Called from the training thread. Any may be empty.
  std::function<void(const TrainProgress&)> on_progress;
  std::function<void(const EvalReport&)> on_eval;
  std::function<void(std::string_view)> on_note;
  // Training stops with Cancelled (after writing a checkpoint, which a
  // later call resumes from) once this becomes true.
  const std::atomic<bool>* cancel = nullptr;
};

// REQUIRES: job.model is set (FailedPrecondition otherwise, naming the
// file).
StatusOr<TrainResult> Train(const JobFile& job, const TrainOptions& options);

}  // namespace dtf::runtime
