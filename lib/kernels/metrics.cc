#include "lib/kernels/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/base/strings.h"
#include "lib/kernels/cuda/loss.h"
#include "lib/kernels/internal/dispatch.h"
#include "lib/kernels/internal/labels.h"
#include "lib/kernels/internal/parallel.h"
#include "lib/kernels/transfer.h"

namespace dtf::kernels {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Keras' backend epsilon.
constexpr double kEpsilon = 1e-7;

Status CheckPair(const Context& ctx, std::string_view metric, const Tensor& a,
                 const Tensor& b) {
  if (a.shape() != b.shape()) {
    return InvalidArgumentError(
        StrCat(metric, ": predictions ", ShapeString(a.shape()), " and labels ",
               ShapeString(b.shape()), " differ in shape"));
  }
  DTF_RETURN_IF_ERROR(internal::CheckDevice(ctx, a.device(), metric));
  return internal::CheckDevice(ctx, b.device(), metric);
}

double Ratio(double num, int64_t den) {
  return den == 0 ? kNaN : num / static_cast<double>(den);
}

// Appends the (score, label > 0.5) pairs of host tensors `scores` and
// `labels`; InvalidArgument, appending nothing, for a NaN score.
Status AppendExamples(std::string_view metric, const Tensor& scores,
                      const Tensor& labels,
                      std::vector<std::pair<float, bool>>* examples) {
  const float* s = scores.data();
  const float* y = labels.data();
  for (int64_t i = 0; i < scores.size(); ++i) {
    if (std::isnan(s[i])) {
      return InvalidArgumentError(
          StrCat(metric, ": score ", i, " of the batch is NaN"));
    }
  }
  examples->reserve(examples->size() + static_cast<size_t>(scores.size()));
  for (int64_t i = 0; i < scores.size(); ++i) {
    examples->emplace_back(s[i], y[i] > 0.5f);
  }
  return OkStatus();
}

// `scores` and `labels` as host tensors: themselves on a CPU context, else
// copies in *host_scores and *host_labels.
Status OnHost(const Context& ctx, const Tensor& scores, const Tensor& labels,
              Tensor* host_scores, Tensor* host_labels, const Tensor** s,
              const Tensor** y) {
  *s = &scores;
  *y = &labels;
  if (ctx.device() != Device::kCuda) return OkStatus();
  DTF_RETURN_IF_ERROR(CopyToHost(ctx, scores, host_scores));
  DTF_RETURN_IF_ERROR(CopyToHost(ctx, labels, host_labels));
  *s = host_scores;
  *y = host_labels;
  return OkStatus();
}

// The (score, label) pairs of a batch appended to `examples`, which are kept
// on the host: a batch on a GPU comes back and goes through the CPU path.
Status AppendBatchExamples(const Context& ctx, std::string_view metric,
                           const Tensor& scores, const Tensor& labels,
                           std::vector<std::pair<float, bool>>* examples) {
  DTF_RETURN_IF_ERROR(CheckPair(ctx, metric, scores, labels));
  Tensor host_s, host_y;
  const Tensor* s = nullptr;
  const Tensor* y = nullptr;
  DTF_RETURN_IF_ERROR(OnHost(ctx, scores, labels, &host_s, &host_y, &s, &y));
  return AppendExamples(metric, *s, *y, examples);
}

}  // namespace

Status BinaryAccuracy::Update(const Context& ctx, const Tensor& probabilities,
                              const Tensor& labels) {
  DTF_RETURN_IF_ERROR(CheckPair(ctx, "BinaryAccuracy", probabilities, labels));
  DTF_CUDA_DISPATCH(ctx, cuda::UpdateBinaryAccuracy(ctx, probabilities, labels,
                                                    &correct_, &count_));
  const float* p = probabilities.data();
  const float* y = labels.data();
  for (int64_t i = 0; i < probabilities.size(); ++i) {
    correct_ += (p[i] > 0.5f) == (y[i] > 0.5f);
  }
  count_ += probabilities.size();
  return OkStatus();
}

void BinaryAccuracy::Merge(const BinaryAccuracy& other) {
  correct_ += other.correct_;
  count_ += other.count_;
}

double BinaryAccuracy::Result() const {
  return Ratio(static_cast<double>(correct_), count_);
}

Status RocAuc::Update(const Context& ctx, const Tensor& scores,
                      const Tensor& labels) {
  return AppendBatchExamples(ctx, "RocAuc", scores, labels, &examples_);
}

void RocAuc::Merge(const RocAuc& other) {
  examples_.insert(examples_.end(), other.examples_.begin(),
                   other.examples_.end());
}

double RocAuc::Result() const {
  std::vector<std::pair<float, bool>> sorted = examples_;
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  double positive_rank_sum = 0.0;
  int64_t positives = 0;
  const size_t n = sorted.size();
  for (size_t i = 0; i < n;) {
    size_t j = i;
    int64_t tied_positives = 0;
    while (j < n && sorted[j].first == sorted[i].first) {
      tied_positives += sorted[j].second;
      ++j;
    }
    // Ranks i+1 .. j (1-based) share their mean.
    const double mean_rank = 0.5 * static_cast<double>(i + 1 + j);
    positive_rank_sum += mean_rank * static_cast<double>(tied_positives);
    positives += tied_positives;
    i = j;
  }
  const int64_t negatives = static_cast<int64_t>(n) - positives;
  if (positives == 0 || negatives == 0) return kNaN;
  const double p = static_cast<double>(positives);
  return (positive_rank_sum - p * (p + 1.0) / 2.0) /
         (p * static_cast<double>(negatives));
}

Status BinaryPrecisionRecall::Update(const Context& ctx,
                                     const Tensor& probabilities,
                                     const Tensor& labels) {
  DTF_RETURN_IF_ERROR(
      CheckPair(ctx, "BinaryPrecisionRecall", probabilities, labels));
  Tensor host_p, host_y;
  const Tensor* p = nullptr;
  const Tensor* y = nullptr;
  DTF_RETURN_IF_ERROR(
      OnHost(ctx, probabilities, labels, &host_p, &host_y, &p, &y));
  for (int64_t i = 0; i < p->size(); ++i) {
    const bool predicted = p->data()[i] > 0.5f;
    const bool actual = y->data()[i] > 0.5f;
    true_positives_ += predicted && actual;
    false_positives_ += predicted && !actual;
    positives_ += actual;
  }
  count_ += p->size();
  return OkStatus();
}

void BinaryPrecisionRecall::Merge(const BinaryPrecisionRecall& other) {
  true_positives_ += other.true_positives_;
  false_positives_ += other.false_positives_;
  positives_ += other.positives_;
  count_ += other.count_;
}

double BinaryPrecisionRecall::Precision() const {
  if (count_ == 0) return kNaN;
  const int64_t predicted = true_positives_ + false_positives_;
  return predicted == 0 ? 0.0 : Ratio(double(true_positives_), predicted);
}

double BinaryPrecisionRecall::Recall() const {
  if (count_ == 0) return kNaN;
  return positives_ == 0 ? 0.0 : Ratio(double(true_positives_), positives_);
}

double BinaryPrecisionRecall::PositiveRate() const {
  return Ratio(double(positives_), count_);
}

Status AveragePrecision::Update(const Context& ctx, const Tensor& scores,
                                const Tensor& labels) {
  return AppendBatchExamples(ctx, "AveragePrecision", scores, labels,
                             &examples_);
}

void AveragePrecision::Merge(const AveragePrecision& other) {
  examples_.insert(examples_.end(), other.examples_.begin(),
                   other.examples_.end());
}

double AveragePrecision::Result() const {
  std::vector<std::pair<float, bool>> sorted = examples_;
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  int64_t positives = 0;
  for (const auto& e : sorted) positives += e.second;
  if (positives == 0) return kNaN;
  double sum = 0.0, last_recall = 0.0;
  int64_t true_positives = 0;
  const size_t n = sorted.size();
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && sorted[j].first == sorted[i].first) {
      true_positives += sorted[j].second;
      ++j;
    }
    // Every score >= sorted[i].first predicted positive: the first j.
    const double recall = double(true_positives) / double(positives);
    const double precision = double(true_positives) / double(j);
    sum += (recall - last_recall) * precision;
    last_recall = recall;
    i = j;
  }
  return sum;
}

Status LogLoss::Update(const Context& ctx, const Tensor& probabilities,
                       const Tensor& labels) {
  DTF_RETURN_IF_ERROR(CheckPair(ctx, "LogLoss", probabilities, labels));
  DTF_CUDA_DISPATCH(
      ctx, cuda::UpdateLogLoss(ctx, probabilities, labels, &sum_, &count_));
  const float* p = probabilities.data();
  const float* y = labels.data();
  for (int64_t i = 0; i < probabilities.size(); ++i) {
    const double q = std::clamp<double>(p[i], kEpsilon, 1.0 - kEpsilon);
    sum_ -= y[i] * std::log(q) + (1.0 - y[i]) * std::log(1.0 - q);
  }
  count_ += probabilities.size();
  return OkStatus();
}

void LogLoss::Merge(const LogLoss& other) {
  sum_ += other.sum_;
  count_ += other.count_;
}

double LogLoss::Result() const { return Ratio(sum_, count_); }

Status MulticlassAccuracy::Update(const Context& ctx, const Tensor& scores,
                                  const IdTensor& labels) {
  if (scores.rank() != 2 || scores.rows() != labels.size()) {
    return InvalidArgumentError(
        StrCat("MulticlassAccuracy: scores ", ShapeString(scores.shape()),
               " must be [B x C] for ", labels.size(), " labels"));
  }
  DTF_RETURN_IF_ERROR(
      internal::CheckDevice(ctx, scores.device(), "MulticlassAccuracy"));
  DTF_RETURN_IF_ERROR(
      internal::CheckDevice(ctx, labels.device(), "MulticlassAccuracy"));
  const int64_t classes = scores.cols();
  DTF_ASSIGN_OR_RETURN(const cuda::BadLabel bad,
                       internal::FindBadLabel(ctx, labels, classes));
  if (bad.row >= 0) {
    return InvalidArgumentError(
        StrCat("MulticlassAccuracy: label ", bad.label, " of row ", bad.row,
               " is not a class in [0, ", classes, ")"));
  }
  DTF_CUDA_DISPATCH(ctx, cuda::UpdateMulticlassAccuracy(ctx, scores, labels,
                                                        &correct_, &count_));
  int64_t correct = 0;
  for (int64_t b = 0; b < labels.size(); ++b) {
    const float* row = scores.data() + b * classes;
    correct += std::max_element(row, row + classes) - row == labels[b];
  }
  correct_ += correct;
  count_ += labels.size();
  return OkStatus();
}

void MulticlassAccuracy::Merge(const MulticlassAccuracy& other) {
  correct_ += other.correct_;
  count_ += other.count_;
}

double MulticlassAccuracy::Result() const {
  return Ratio(static_cast<double>(correct_), count_);
}

Status SquaredError::Update(const Context& ctx, const Tensor& predictions,
                            const Tensor& targets) {
  DTF_RETURN_IF_ERROR(CheckPair(ctx, "SquaredError", predictions, targets));
  DTF_CUDA_DISPATCH(
      ctx, cuda::UpdateSquaredError(ctx, predictions, targets, &sum_, &count_));
  const float* p = predictions.data();
  const float* t = targets.data();
  for (int64_t i = 0; i < predictions.size(); ++i) {
    const double d = static_cast<double>(p[i]) - t[i];
    sum_ += d * d;
  }
  count_ += predictions.size();
  return OkStatus();
}

void SquaredError::Merge(const SquaredError& other) {
  sum_ += other.sum_;
  count_ += other.count_;
}

double SquaredError::MeanSquaredError() const { return Ratio(sum_, count_); }

double SquaredError::RootMeanSquaredError() const {
  return std::sqrt(MeanSquaredError());
}

}  // namespace dtf::kernels
