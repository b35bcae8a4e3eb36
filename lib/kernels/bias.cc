// BiasAdd and its gradient.
#include <algorithm>
#include <cstdint>

#include "lib/base/strings.h"
#include "lib/kernels/cuda/dense.h"
#include "lib/kernels/dense.h"
#include "lib/kernels/internal/dispatch.h"
#include "lib/kernels/internal/parallel.h"

namespace dtf::kernels {
namespace {

// Columns summed together by one BiasAddGrad task: a multiple of the vector
// width, small enough to split a wide layer over threads.
constexpr int64_t kBiasColumnBlock = 64;

}  // namespace

Status BiasAdd(const Context& ctx, const Tensor& bias, Tensor* x) {
  if (x->rank() != 2 || bias.rank() != 1 || bias.dim(0) != x->cols()) {
    return InvalidArgumentError(
        StrCat("BiasAdd: bias ", ShapeString(bias.shape()), " does not fit x ",
               ShapeString(x->shape())));
  }
  DTF_RETURN_IF_ERROR(internal::CheckDevice(ctx, bias.device(), "BiasAdd"));
  DTF_RETURN_IF_ERROR(internal::CheckDevice(ctx, x->device(), "BiasAdd"));
  DTF_CUDA_DISPATCH(ctx, cuda::BiasAdd(ctx, bias, x));
  const int64_t d = x->cols();
  const float* b = bias.data();
  float* data = x->data();
  internal::ParallelFor(ctx, x->rows(),
                        internal::kStreamingCycles * static_cast<double>(d),
                        [&](int64_t lo, int64_t hi) {
                          for (int64_t i = lo; i < hi; ++i) {
                            float* row = data + i * d;
                            for (int64_t j = 0; j < d; ++j) row[j] += b[j];
                          }
                        });
  return OkStatus();
}

Status BiasAddGrad(const Context& ctx, const Tensor& dy, Tensor* dbias) {
  if (dy.rank() != 2) {
    return InvalidArgumentError(StrCat(
        "BiasAddGrad: dy ", ShapeString(dy.shape()), " must be a matrix"));
  }
  DTF_RETURN_IF_ERROR(internal::CheckDevice(ctx, dy.device(), "BiasAddGrad"));
  if (dbias == &dy) {
    return InvalidArgumentError("BiasAddGrad: dbias must not alias dy");
  }
  const int64_t rows = dy.rows();
  const int64_t d = dy.cols();
  internal::PlaceOutput(ctx, dbias, {d});
  DTF_CUDA_DISPATCH(ctx, cuda::BiasAddGrad(ctx, dy, dbias));
  const float* in = dy.data();
  float* out = dbias->data();
  // Each task owns a block of columns and adds the rows in order, so every
  // thread count gives bit-identical sums.
  const int64_t blocks = (d + kBiasColumnBlock - 1) / kBiasColumnBlock;
  internal::ParallelFor(
      ctx, blocks,
      internal::kStreamingCycles * static_cast<double>(rows * kBiasColumnBlock),
      [&](int64_t lo, int64_t hi) {
        const int64_t c0 = lo * kBiasColumnBlock;
        const int64_t c1 = std::min(d, hi * kBiasColumnBlock);
        float* acc = out + c0;
        const int64_t width = c1 - c0;
        std::fill_n(acc, width, 0.0f);
        for (int64_t i = 0; i < rows; ++i) {
          const float* row = in + i * d + c0;
          for (int64_t j = 0; j < width; ++j) acc[j] += row[j];
        }
      });
  return OkStatus();
}

}  // namespace dtf::kernels
