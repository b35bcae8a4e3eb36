// Streaming evaluation metrics: Update once per batch, Result at the end,
// Reset to start over. Sums are kept in double. Update returns
// InvalidArgument for mismatched shapes or devices and then leaves the metric
// unchanged. Not thread-safe; use one metric per thread and Merge.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "lib/base/status.h"
#include "lib/kernels/context.h"
#include "lib/kernels/tensor.h"

namespace dtf::kernels {

// Fraction of binary predictions that are right: a probability p predicts 1
// when p > 0.5 (Keras' BinaryAccuracy threshold); a label is 1 when > 0.5.
class BinaryAccuracy {
 public:
  Status Update(const Context& ctx, const Tensor& probabilities,
                const Tensor& labels);
  void Merge(const BinaryAccuracy& other);
  // NaN before any example.
  double Result() const;
  int64_t count() const { return count_; }
  void Reset() { *this = BinaryAccuracy(); }

 private:
  int64_t correct_ = 0;
  int64_t count_ = 0;
};

// Exact area under the ROC curve: keeps every (score, label) pair and
// computes the Mann-Whitney statistic
//   AUC = (R+ - P (P + 1) / 2) / (P N)
// where R+ sums the ranks of the P positive examples among all P + N scores
// in ascending order, tied scores sharing the average of their ranks (a tie
// between a positive and a negative counts one half). Labels are positive
// when > 0.5. Unlike tf.keras.metrics.AUC (200 thresholds, an
// approximation), the result is exact; memory grows with the examples seen.
// A NaN score is InvalidArgument.
class RocAuc {
 public:
  Status Update(const Context& ctx, const Tensor& scores, const Tensor& labels);
  void Merge(const RocAuc& other);
  // NaN unless both classes were seen. Sorts a copy: O(n log n).
  double Result() const;
  int64_t count() const { return static_cast<int64_t>(examples_.size()); }
  void Reset() { examples_.clear(); }

 private:
  std::vector<std::pair<float, bool>> examples_;
};

// Precision and recall of binary predictions at BinaryAccuracy's threshold
// (a probability p predicts 1 when p > 0.5; a label is 1 when > 0.5):
//   precision = TP / (TP + FP),  recall = TP / (TP + FN).
// A ratio whose denominator is zero is 0 (sklearn's zero_division=0). Also
// counts the positive labels, for the class balance. On a CUDA context the
// batch is copied to the host first.
class BinaryPrecisionRecall {
 public:
  Status Update(const Context& ctx, const Tensor& probabilities,
                const Tensor& labels);
  void Merge(const BinaryPrecisionRecall& other);
  // NaN before any example.
  double Precision() const;
  double Recall() const;
  // Fraction of the labels that are positive; NaN before any example.
  double PositiveRate() const;
  int64_t count() const { return count_; }
  void Reset() { *this = BinaryPrecisionRecall(); }

 private:
  int64_t true_positives_ = 0;
  int64_t false_positives_ = 0;
  int64_t positives_ = 0;
  int64_t count_ = 0;
};

// Average precision, the area under the precision-recall curve as
// sklearn.metrics.average_precision_score defines it: with the distinct
// scores taken in descending order as thresholds t_1 > t_2 > ..., and P_n,
// R_n the precision and recall of predicting 1 for every score >= t_n,
//   AP = sum_n (R_n - R_{n-1}) P_n,  R_0 = 0
// (a step function, no interpolation; tied scores enter together). Keeps
// every (score, label) pair, as RocAuc does; labels are positive when > 0.5.
// A NaN score is InvalidArgument.
class AveragePrecision {
 public:
  Status Update(const Context& ctx, const Tensor& scores, const Tensor& labels);
  void Merge(const AveragePrecision& other);
  // NaN unless a positive was seen. Sorts a copy: O(n log n).
  double Result() const;
  int64_t count() const { return static_cast<int64_t>(examples_.size()); }
  void Reset() { examples_.clear(); }

 private:
  std::vector<std::pair<float, bool>> examples_;
};

// Mean binary cross-entropy of probabilities p against labels y in [0, 1],
// with p clipped to [1e-7, 1 - 1e-7] (Keras' epsilon) first:
//   -(y log(p) + (1 - y) log(1 - p)).
class LogLoss {
 public:
  Status Update(const Context& ctx, const Tensor& probabilities,
                const Tensor& labels);
  void Merge(const LogLoss& other);
  // NaN before any example.
  double Result() const;
  int64_t count() const { return count_; }
  void Reset() { *this = LogLoss(); }

 private:
  double sum_ = 0.0;
  int64_t count_ = 0;
};

// Fraction of rows of scores [B x C] (logits or probabilities) whose largest
// score is at the label's class; ties go to the lowest class, as tf.argmax.
// Labels outside [0, C) are InvalidArgument.
class MulticlassAccuracy {
 public:
  Status Update(const Context& ctx, const Tensor& scores,
                const IdTensor& labels);
  void Merge(const MulticlassAccuracy& other);
  // NaN before any example.
  double Result() const;
  int64_t count() const { return count_; }
  void Reset() { *this = MulticlassAccuracy(); }

 private:
  int64_t correct_ = 0;
  int64_t count_ = 0;
};

// Regression error over all elements seen: mean squared error and its root.
class SquaredError {
 public:
  Status Update(const Context& ctx, const Tensor& predictions,
                const Tensor& targets);
  void Merge(const SquaredError& other);
  // NaN before any example.
  double MeanSquaredError() const;
  double RootMeanSquaredError() const;
  int64_t count() const { return count_; }
  void Reset() { *this = SquaredError(); }

 private:
  double sum_ = 0.0;
  int64_t count_ = 0;
};

}  // namespace dtf::kernels
