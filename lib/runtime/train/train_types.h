// What every training loop reports, whatever runs it (`dtf train`'s
// Train, a parameter-server or allreduce worker): its progress, each
// evaluation, and its result.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

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

// Where a loop's training steps spent their time, in seconds summed over
// the steps: waiting for the pull of the variables a batch reads
// (Update::Pull), the forward and backward pass (with the gradients an
// overlapping update sends meanwhile), waiting for the next batch, and the
// update (Update::Apply: sending what is left of the gradients, waiting
// for the other workers or the parameter servers, applying).
struct StepTimes {
  double pull = 0;
  double compute = 0;
  double input = 0;
  double update = 0;
};

struct TrainResult {
  int64_t steps = 0;         // global step at the end
  int64_t examples = 0;      // examples trained on by this call
  double train_seconds = 0;  // time in training steps, eval excluded
  double examples_per_sec = 0;
  StepTimes step_times;  // of the `steps_run` steps this call ran
  int64_t steps_run = 0;
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

}  // namespace dtf::runtime
