#include "lib/kernels/loss.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>

#include "lib/base/strings.h"
#include "lib/kernels/cuda/loss.h"
#include "lib/kernels/internal/dispatch.h"
#include "lib/kernels/internal/labels.h"
#include "lib/kernels/internal/parallel.h"

namespace dtf::kernels {
namespace {

Status CheckPair(const Context& ctx, std::string_view op, const Tensor& x,
                 const Tensor& y, std::string_view y_name) {
  if (x.shape() != y.shape()) {
    return InvalidArgumentError(
        StrCat(op, ": input ", ShapeString(x.shape()), " and ", y_name, " ",
               ShapeString(y.shape()), " differ in shape"));
  }
  DTF_RETURN_IF_ERROR(internal::CheckDevice(ctx, x.device(), op));
  return internal::CheckDevice(ctx, y.device(), op);
}

}  // namespace

StatusOr<float> SigmoidCrossEntropy(const Context& ctx, const Tensor& logits,
                                    const Tensor& labels, Tensor* dlogits) {
  DTF_RETURN_IF_ERROR(
      CheckPair(ctx, "SigmoidCrossEntropy", logits, labels, "labels"));
  const int64_t n = logits.size();
  if (n == 0) return 0.0f;
  if (dlogits != nullptr) internal::PlaceOutput(ctx, dlogits, logits.shape());
  DTF_CUDA_DISPATCH(ctx,
                    cuda::SigmoidCrossEntropy(ctx, logits, labels, dlogits));
  const float* x = logits.data();
  const float* z = labels.data();
  float* dx = dlogits != nullptr ? dlogits->data() : nullptr;
  const float inv_n = 1.0f / static_cast<float>(n);
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const float e = std::exp(-std::fabs(x[i]));
    total += std::max(x[i], 0.0f) - x[i] * z[i] + std::log1p(e);
    if (dx != nullptr) {
      const float p = x[i] >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
      dx[i] = (p - z[i]) * inv_n;
    }
  }
  return static_cast<float>(total / static_cast<double>(n));
}

StatusOr<float> SoftmaxCrossEntropy(const Context& ctx, const Tensor& logits,
                                    const IdTensor& labels, Tensor* dlogits) {
  if (logits.rank() != 2 || logits.rows() != labels.size()) {
    return InvalidArgumentError(
        StrCat("SoftmaxCrossEntropy: logits ", ShapeString(logits.shape()),
               " must be [B x C] for ", labels.size(), " labels"));
  }
  DTF_RETURN_IF_ERROR(
      internal::CheckDevice(ctx, logits.device(), "SoftmaxCrossEntropy"));
  DTF_RETURN_IF_ERROR(
      internal::CheckDevice(ctx, labels.device(), "SoftmaxCrossEntropy"));
  const int64_t batch = logits.rows();
  const int64_t classes = logits.cols();
  DTF_ASSIGN_OR_RETURN(const cuda::BadLabel bad,
                       internal::FindBadLabel(ctx, labels, classes));
  if (bad.row >= 0) {
    return InvalidArgumentError(
        StrCat("SoftmaxCrossEntropy: label ", bad.label, " of row ", bad.row,
               " is not a class in [0, ", classes, ")"));
  }
  if (batch == 0) return 0.0f;
  if (dlogits != nullptr) internal::PlaceOutput(ctx, dlogits, logits.shape());
  DTF_CUDA_DISPATCH(ctx,
                    cuda::SoftmaxCrossEntropy(ctx, logits, labels, dlogits));
  float* dx = dlogits != nullptr ? dlogits->data() : nullptr;
  const float inv_b = 1.0f / static_cast<float>(batch);
  double total = 0.0;
  for (int64_t b = 0; b < batch; ++b) {
    const float* x = logits.data() + b * classes;
    const float max = *std::max_element(x, x + classes);
    double sum = 0.0;
    for (int64_t c = 0; c < classes; ++c) sum += std::exp(x[c] - max);
    const double log_sum = std::log(sum);
    total += log_sum - (x[labels[b]] - max);
    if (dx != nullptr) {
      float* g = dx + b * classes;
      const float inv_sum = static_cast<float>(1.0 / sum);
      for (int64_t c = 0; c < classes; ++c) {
        g[c] = std::exp(x[c] - max) * inv_sum * inv_b;
      }
      g[labels[b]] -= inv_b;
    }
  }
  return static_cast<float>(total / static_cast<double>(batch));
}

StatusOr<float> MeanSquaredError(const Context& ctx, const Tensor& predictions,
                                 const Tensor& targets, Tensor* dpredictions) {
  DTF_RETURN_IF_ERROR(
      CheckPair(ctx, "MeanSquaredError", predictions, targets, "targets"));
  const int64_t n = predictions.size();
  if (n == 0) return 0.0f;
  if (dpredictions != nullptr) {
    internal::PlaceOutput(ctx, dpredictions, predictions.shape());
  }
  DTF_CUDA_DISPATCH(
      ctx, cuda::MeanSquaredError(ctx, predictions, targets, dpredictions));
  const float* p = predictions.data();
  const float* t = targets.data();
  float* dp = dpredictions != nullptr ? dpredictions->data() : nullptr;
  const float scale = 2.0f / static_cast<float>(n);
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const float d = p[i] - t[i];
    total += static_cast<double>(d) * d;
    if (dp != nullptr) dp[i] = scale * d;
  }
  return static_cast<float>(total / static_cast<double>(n));
}

namespace internal {

// The first label outside [0, classes), looked for where the labels are
// (ctx is read only in a build with CUDA). Declared in internal/labels.h.
StatusOr<cuda::BadLabel> FindBadLabel([[maybe_unused]] const Context& ctx,
                                      const IdTensor& labels, int64_t classes) {
  DTF_CUDA_DISPATCH(ctx, cuda::FindBadLabel(ctx, labels, classes));
  for (int64_t b = 0; b < labels.size(); ++b) {
    if (labels[b] < 0 || labels[b] >= classes) {
      return cuda::BadLabel{b, labels[b]};
    }
  }
  return cuda::BadLabel{};
}

}  // namespace internal

}  // namespace dtf::kernels
