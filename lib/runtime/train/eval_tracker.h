// What a run's evaluations decide, the same way in every training mode (the
// chief's duties, chief.h): which evaluation is the best so far (its model
// is kept as checkpoint-best.dtf and exported at the end), when early
// stopping ends training, and a warning, once per run, when accuracy is no
// better than predicting the majority class everywhere.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "lib/base/status.h"
#include "lib/data/train_options.h"
#include "lib/runtime/model/feature_layer.h"
#include "lib/runtime/model/model.h"
#include "lib/runtime/train/train_types.h"

namespace dtf::runtime {

struct EvalVerdict {
  // The evaluation improved the monitored metric: write the best checkpoint.
  bool improved = false;
  // Early stopping: train.early_stopping.patience evaluations in a row
  // without improvement. Stays true for every later evaluation.
  bool stop = false;
  // Non-empty the first time accuracy is within kMajorityMargin of (or
  // below) the majority-class rate of binary labels.
  std::string warning;
};

class EvalTracker {
 public:
  // Accuracy within this of the majority-class rate tells nothing about the
  // model.
  static constexpr double kMajorityMargin = 0.005;

  // Monitors train.early_stopping's metric, or the eval loss when the job
  // has no early stopping (then Observe never says stop).
  explicit EvalTracker(const TrainSpec& train);

  // One evaluation, in step order. A metric that is NaN or missing never
  // improves.
  EvalVerdict Observe(const EvalReport& report);
  // Takes `best`, a resumed run's best evaluation so far (best_eval.h), as
  // the one later evaluations must beat. Ignored when it has no finite
  // value of the monitored metric.
  void Restore(const EvalReport& best);

  const std::string& metric() const { return metric_; }
  // The best evaluation so far; none before one had a finite metric.
  const std::optional<EvalReport>& best() const { return best_; }
  // The last evaluation observed is the best: the model evaluated is the
  // one to export.
  bool last_was_best() const { return last_was_best_; }
  // Some Observe said stop.
  bool stopped() const { return stopped_; }
  // What to log when training stops early at `step`.
  std::string StopNote(int64_t step) const;

 private:
  std::string metric_;
  bool higher_is_better_;
  double min_delta_ = 0;
  // 0: no early stopping.
  int64_t patience_ = 0;
  std::optional<EvalReport> best_;
  double best_value_ = 0;
  int64_t since_best_ = 0;
  bool stopped_ = false;
  bool warned_ = false;
  bool last_was_best_ = false;
};

// The best evaluation and its checkpoint in a result: result->best_eval,
// best_metric, best_checkpoint (`checkpoint` when tracker.best() is set) and
// stopped_early.
void RecordBest(const EvalTracker& tracker, const std::string& checkpoint,
                TrainResult* result);

// Exports to `dir` the best evaluation's model: the checkpoint at
// `best_checkpoint` restored into `layer` and `model` (on the host) when the
// last evaluation was not the best, `model` as it is otherwise.
Status ExportBest(const EvalTracker& tracker,
                  const std::string& best_checkpoint, const std::string& dir,
                  std::string_view model_toml, FeatureLayer* layer,
                  Model* model);

}  // namespace dtf::runtime
