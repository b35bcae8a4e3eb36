// Evaluation: the metrics of a job's loss over a set of TFRecord shards.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/base/status.h"
#include "lib/data/model_options.h"
#include "lib/kernels/context.h"
#include "lib/kernels/metrics.h"
#include "lib/kernels/tensor.h"
#include "lib/runtime/model/feature_layer.h"
#include "lib/runtime/model/model.h"

namespace dtf::runtime {

struct EvalMetrics {
  int64_t examples = 0;
  // In a fixed order per loss: binary cross-entropy gives loss (log-loss),
  // accuracy (threshold 0.5), auc (exact ROC AUC), precision and recall
  // (threshold 0.5) and pr_auc (average precision); softmax cross-entropy
  // loss and accuracy; squared error loss (MSE) and rmse.
  std::vector<std::pair<std::string, double>> values;
  // Binary labels only: the fraction of the examples labelled positive.
  std::optional<double> positive_rate;
  std::optional<double> Get(std::string_view name) const;
};

// Accumulates the metrics of `loss` over batches. Not thread-safe.
class MetricSet {
 public:
  explicit MetricSet(Loss loss) : loss_(loss) {}
  // `logits` of the rows of `inputs` (transformed with labels).
  Status Update(const kernels::Context& ctx, const kernels::Tensor& logits,
                const ModelInputs& inputs);
  EvalMetrics Result() const;

 private:
  Loss loss_;
  kernels::Tensor scratch_;
  kernels::BinaryAccuracy accuracy_;
  kernels::RocAuc auc_;
  kernels::BinaryPrecisionRecall precision_recall_;
  kernels::AveragePrecision average_precision_;
  kernels::LogLoss log_loss_;
  kernels::MulticlassAccuracy class_accuracy_;
  kernels::SquaredError squared_;
  double softmax_loss_sum_ = 0;
  int64_t examples_ = 0;
};

// The evaluation split's batches, read, parsed and transformed by the first
// evaluation of a run and kept for the later ones (the feature layer does
// not change during a run), while they fit `budget_bytes`. Over the budget
// nothing is kept and every evaluation reads the files. Not thread-safe.
struct EvalInputCache {
  // 0 (default): keep nothing.
  int64_t budget_bytes = 0;
  // The batches of the whole split, in order, once `complete`.
  std::vector<ModelInputs> batches;
  bool complete = false;
  bool over_budget = false;
  int64_t bytes = 0;
};

// Makes `model` ready for one batch of host inputs: the inputs the model
// reads for it (the update's own copy, which it may have rewritten) and the
// variables they read, in place. Null: the model holds every variable.
using EvalPrepare =
    std::function<StatusOr<const ModelInputs*>(const ModelInputs& host)>;

// Runs `model` (inference mode) over every record of `files` in order.
// Cancelled when *cancel becomes true. With `cache`, the batches come from
// it when it holds them, else it is filled as the files are read; the
// metrics are the same either way. `cache` must belong to one run: the same
// `layer`, `files` and `batch_size` every time.
StatusOr<EvalMetrics> Evaluate(const kernels::Context& ctx,
                               const FeatureLayer& layer, Model& model,
                               const std::vector<std::string>& files,
                               int64_t batch_size,
                               const std::atomic<bool>* cancel = nullptr,
                               EvalInputCache* cache = nullptr,
                               const EvalPrepare& prepare = nullptr);

}  // namespace dtf::runtime
