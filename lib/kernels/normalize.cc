// Normalize and NormalizerFit (feature_transforms.h). Normalize runs on
// either device (cuda/elementwise.cu on CUDA); NormalizerFit adds in double
// on the host.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "lib/base/strings.h"
#include "lib/kernels/cuda/elementwise.h"
#include "lib/kernels/feature_transforms.h"
#include "lib/kernels/internal/dispatch.h"
#include "lib/kernels/internal/parallel.h"

namespace dtf::kernels {
namespace {

// Keras' backend epsilon: the smallest standard deviation divided by.
constexpr float kMinStddev = 1e-7f;

// The feature count of values laid out as [N] or [N x F], or -1.
int64_t NumFeatures(const Tensor& values) {
  if (values.rank() == 1) return 1;
  if (values.rank() == 2) return values.cols();
  return -1;
}

}  // namespace

Status Normalize(const Context& ctx, const Tensor& values,
                 std::span<const float> mean, std::span<const float> stddev,
                 Tensor* out) {
  const int64_t f = NumFeatures(values);
  if (f < 0 || static_cast<int64_t>(mean.size()) != f ||
      static_cast<int64_t>(stddev.size()) != f) {
    return InvalidArgumentError(
        StrCat("Normalize: values ", ShapeString(values.shape()), " with ",
               mean.size(), " means and ", stddev.size(),
               " deviations; expected [N] or [N x F] with F of each"));
  }
  DTF_RETURN_IF_ERROR(internal::CheckDevice(ctx, values.device(), "Normalize"));
  if (out != &values) internal::PlaceOutput(ctx, out, values.shape());
  DTF_CUDA_DISPATCH(
      ctx, cuda::Normalize(ctx, values, f, mean, stddev, kMinStddev, out));
  const int64_t rows = f == 0 ? 0 : values.size() / f;
  const float* in = values.data();
  float* result = out->data();
  const float* m = mean.data();
  const float* s = stddev.data();
  internal::ParallelFor(
      ctx, rows, 2.0 * static_cast<double>(f), [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) {
          for (int64_t j = 0; j < f; ++j) {
            result[i * f + j] =
                (in[i * f + j] - m[j]) / std::max(s[j], kMinStddev);
          }
        }
      });
  return OkStatus();
}

NormalizerFit::NormalizerFit(int64_t num_features)
    : mean_(static_cast<size_t>(num_features)),
      m2_(static_cast<size_t>(num_features)),
      batch_mean_(static_cast<size_t>(num_features)),
      batch_m2_(static_cast<size_t>(num_features)) {}

Status NormalizerFit::Add(const Context& /*ctx*/, const Tensor& values) {
  const int64_t f = static_cast<int64_t>(mean_.size());
  if (NumFeatures(values) != f || (values.rank() == 1 && f != 1)) {
    return InvalidArgumentError(StrCat("NormalizerFit: values ",
                                       ShapeString(values.shape()),
                                       " do not have ", f, " features"));
  }
  // The fit adds on the host in double, whatever the context (a CUDA
  // worker fits from the host batches it reads), so values must be there.
  if (values.device() != Device::kCpu) {
    return InvalidArgumentError(
        "NormalizerFit: values are on a CUDA device; NormalizerFit takes host "
        "values (copy them with CopyToHost)");
  }
  const int64_t n = values.size() / std::max<int64_t>(f, 1);
  if (n == 0 || f == 0) return OkStatus();
  const float* in = values.data();
  std::fill(batch_mean_.begin(), batch_mean_.end(), 0.0);
  std::fill(batch_m2_.begin(), batch_m2_.end(), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < f; ++j) batch_mean_[j] += in[i * f + j];
  }
  for (int64_t j = 0; j < f; ++j) batch_mean_[j] /= static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < f; ++j) {
      const double d = in[i * f + j] - batch_mean_[j];
      batch_m2_[j] += d * d;
    }
  }
  const double na = static_cast<double>(count_);
  const double nb = static_cast<double>(n);
  const double total = na + nb;
  for (int64_t j = 0; j < f; ++j) {
    const double delta = batch_mean_[j] - mean_[j];
    mean_[j] += delta * nb / total;
    m2_[j] += batch_m2_[j] + delta * delta * na * nb / total;
  }
  count_ += n;
  return OkStatus();
}

std::vector<float> NormalizerFit::mean() const {
  return std::vector<float>(mean_.begin(), mean_.end());
}

std::vector<float> NormalizerFit::stddev() const {
  std::vector<float> out(m2_.size(), 0.0f);
  if (count_ == 0) return out;
  for (size_t j = 0; j < m2_.size(); ++j) {
    out[j] =
        static_cast<float>(std::sqrt(m2_[j] / static_cast<double>(count_)));
  }
  return out;
}

}  // namespace dtf::kernels
