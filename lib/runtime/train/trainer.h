// The trainer core: trains a job's model on its training shards in one
// process, evaluating, checkpointing and exporting as the job's [train]
// table says. `dtf train` runs it; distributed workers run the same step.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "lib/base/status.h"
#include "lib/data/job_file.h"
#include "lib/runtime/train/evaluator.h"

namespace dtf::runtime {

struct TrainProgress {
  int64_t step = 0;
  int64_t epoch = 0;  // epochs completed
  int64_t examples = 0;
  // Mean training loss over the steps since the last report.
  double loss = 0;
  // Training examples per second since the last report.
  double examples_per_sec = 0;
  double elapsed_seconds = 0;
};

struct EvalReport {
  int64_t step = 0;
  EvalMetrics metrics;
  // Which split the metrics come from ("eval", or "train" when the job has
  // no evaluation split).
  std::string split;
};

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

struct TrainResult {
  int64_t steps = 0;         // global step at the end
  int64_t examples = 0;      // examples trained on by this call
  double train_seconds = 0;  // time in training steps, eval excluded
  double examples_per_sec = 0;
  double loss = 0;  // mean training loss of the last epoch or window
  std::optional<EvalReport> eval;  // the last evaluation
  std::string checkpoint;          // path written (the last step)
  // The best evaluation by `best_metric` (train.early_stopping.metric, or
  // the eval loss without early stopping) and the checkpoint of its model
  // (checkpoint-best.dtf), which the export comes from; none without an
  // evaluation that had a finite metric (the export is then the last
  // step's).
  std::optional<EvalReport> best_eval;
  std::string best_metric;
  std::string best_checkpoint;
  // Early stopping ended training before its epochs or steps.
  bool stopped_early = false;
  std::string export_dir;  // path written
  int64_t num_parameters = 0;
};

// REQUIRES: job.model is set (FailedPrecondition otherwise, naming the
// file).
StatusOr<TrainResult> Train(const JobFile& job, const TrainOptions& options);

}  // namespace dtf::runtime
