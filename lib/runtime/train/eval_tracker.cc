#include "lib/runtime/train/eval_tracker.h"

#include <algorithm>
#include <cmath>

#include "lib/base/strings.h"
#include "lib/runtime/export/exported_model.h"

namespace dtf::runtime {

EvalTracker::EvalTracker(const TrainSpec& train)
    : metric_(train.early_stopping ? train.early_stopping->metric : "loss"),
      higher_is_better_(HigherIsBetter(metric_)) {
  if (train.early_stopping) {
    min_delta_ = train.early_stopping->min_delta;
    patience_ = train.early_stopping->patience;
  }
}

EvalVerdict EvalTracker::Observe(const EvalReport& report) {
  EvalVerdict verdict;
  const EvalMetrics& m = report.metrics;
  const std::optional<double> accuracy = m.Get("accuracy");
  if (!warned_ && accuracy && m.positive_rate &&
      std::isfinite(*m.positive_rate)) {
    const double majority = std::max(*m.positive_rate, 1 - *m.positive_rate);
    if (*accuracy <= majority + kMajorityMargin) {
      warned_ = true;
      verdict.warning = fmt::format(
          "accuracy {:.3f} {} the majority-class rate {:.3f} ({:.1f}% "
          "positives in the {} split): the model may predict one class; see "
          "precision, recall and pr_auc",
          *accuracy,
          *accuracy < majority - kMajorityMargin ? "is below" : "equals",
          majority, 100 * *m.positive_rate, report.split);
    }
  }
  const std::optional<double> value = m.Get(metric_);
  if (value && std::isfinite(*value)) {
    const bool better =
        !best_ || (higher_is_better_ ? *value > best_value_ + min_delta_
                                     : *value < best_value_ - min_delta_);
    if (better) {
      best_ = report;
      best_value_ = *value;
      since_best_ = 0;
      verdict.improved = true;
    }
  }
  last_was_best_ = verdict.improved;
  if (!verdict.improved) ++since_best_;
  if (patience_ > 0 && since_best_ >= patience_) stopped_ = true;
  verdict.stop = stopped_;
  return verdict;
}

void EvalTracker::Restore(const EvalReport& best) {
  const std::optional<double> value = best.metrics.Get(metric_);
  if (!value || !std::isfinite(*value)) return;
  best_ = best;
  best_value_ = *value;
  since_best_ = 0;
  last_was_best_ = false;
}

std::string EvalTracker::StopNote(int64_t step) const {
  std::string best = "no finite value yet";
  if (best_) {
    best = fmt::format("best {:.4f} at step {}", best_value_, best_->step);
  }
  return StrCat("early stopping: eval ", metric_, " has not improved for ",
                patience_, " evaluation", patience_ == 1 ? "" : "s", " (", best,
                "); stopping at step ", step);
}

void RecordBest(const EvalTracker& tracker, const std::string& checkpoint,
                TrainResult* result) {
  result->best_eval = tracker.best();
  result->best_metric = tracker.metric();
  result->best_checkpoint = tracker.best() ? checkpoint : "";
  result->stopped_early = tracker.stopped();
}

Status ExportBest(const EvalTracker& tracker,
                  const std::string& best_checkpoint, const std::string& dir,
                  std::string_view model_toml, FeatureLayer* layer,
                  Model* model) {
  if (tracker.best() && !tracker.last_was_best()) {
    return ExportCheckpoint(best_checkpoint, dir, model_toml, layer, model);
  }
  return ExportModel(dir, model_toml, *layer, *model);
}

}  // namespace dtf::runtime
