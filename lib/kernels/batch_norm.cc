// BatchNormTrain, BatchNormInfer and BatchNormGrad: column blocks on the
// context's threads on the CPU, cuda/batch_norm.cu on CUDA.
#include "lib/kernels/batch_norm.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>

#include "lib/base/strings.h"
#include "lib/kernels/cuda/batch_norm.h"
#include "lib/kernels/internal/dispatch.h"
#include "lib/kernels/internal/parallel.h"

namespace dtf::kernels {
namespace {

// Columns handled by one task: its statistics live on the stack, and a
// layer of a few hundred units still splits over several threads.
constexpr int64_t kNormColumnBlock = 32;

// Cost per element, in cycles, of the passes over a column block (sums in
// double, then the normalization).
constexpr double kCyclesPerElement = 2.0;

// InvalidArgument unless `t` is rank-1 with `d` elements.
Status CheckColumnVector(std::string_view op, std::string_view name,
                         const Tensor& t, const Tensor& x) {
  if (t.rank() == 1 && t.dim(0) == x.cols()) return OkStatus();
  return InvalidArgumentError(StrCat(op, ": ", name, " ",
                                     ShapeString(t.shape()), " does not fit x ",
                                     ShapeString(x.shape())));
}

// Runs f(c0, width) for the column blocks of a [rows x d] matrix, each
// block on one thread.
template <typename F>
void ForColumnBlocks(const Context& ctx, int64_t rows, int64_t d, F&& f) {
  const int64_t blocks = (d + kNormColumnBlock - 1) / kNormColumnBlock;
  internal::ParallelFor(
      ctx, blocks,
      kCyclesPerElement * static_cast<double>(rows * kNormColumnBlock),
      [&](int64_t lo, int64_t hi) {
        for (int64_t b = lo; b < hi; ++b) {
          const int64_t c0 = b * kNormColumnBlock;
          f(c0, std::min(kNormColumnBlock, d - c0));
        }
      });
}

}  // namespace

Status BatchNormTrain(const Context& ctx, const Tensor& x, const Tensor& gamma,
                      const Tensor& beta, Tensor* moving_mean,
                      Tensor* moving_variance, const BatchNormOptions& options,
                      Tensor* y, BatchNormCache* cache) {
  constexpr std::string_view kOp = "BatchNormTrain";
  if (x.rank() != 2 || x.rows() < 1) {
    return InvalidArgumentError(StrCat(kOp, ": x ", ShapeString(x.shape()),
                                       " must be a matrix with at least one "
                                       "row"));
  }
  DTF_RETURN_IF_ERROR(CheckColumnVector(kOp, "gamma", gamma, x));
  DTF_RETURN_IF_ERROR(CheckColumnVector(kOp, "beta", beta, x));
  DTF_RETURN_IF_ERROR(CheckColumnVector(kOp, "moving_mean", *moving_mean, x));
  DTF_RETURN_IF_ERROR(
      CheckColumnVector(kOp, "moving_variance", *moving_variance, x));
  if (moving_mean == moving_variance) {
    return InvalidArgumentError(
        StrCat(kOp, ": moving_mean and moving_variance are one tensor"));
  }
  if (y == &cache->xhat || y == &cache->inv_std) {
    return InvalidArgumentError(StrCat(kOp, ": y must not be in the cache"));
  }
  for (const Tensor* t :
       {&x, &gamma, &beta, static_cast<const Tensor*>(moving_mean),
        static_cast<const Tensor*>(moving_variance)}) {
    DTF_RETURN_IF_ERROR(internal::CheckDevice(ctx, t->device(), kOp));
  }
  const int64_t n = x.rows();
  const int64_t d = x.cols();
  internal::PlaceOutput(ctx, &cache->xhat, x.shape());
  internal::PlaceOutput(ctx, &cache->inv_std, {d});
  if (y != &x) internal::PlaceOutput(ctx, y, x.shape());
  DTF_CUDA_DISPATCH(ctx,
                    cuda::BatchNormTrain(ctx, x, gamma, beta, moving_mean,
                                         moving_variance, options, y, cache));
  const float* in = x.data();
  const float* g = gamma.data();
  const float* b = beta.data();
  float* mm = moving_mean->data();
  float* mv = moving_variance->data();
  float* xhat = cache->xhat.data();
  float* inv_std = cache->inv_std.data();
  float* out = y->data();
  const double eps = options.epsilon;
  const float momentum = options.momentum;
  ForColumnBlocks(ctx, n, d, [&](int64_t c0, int64_t width) {
    double sum[kNormColumnBlock] = {};
    for (int64_t i = 0; i < n; ++i) {
      const float* row = in + i * d + c0;
      for (int64_t j = 0; j < width; ++j) sum[j] += row[j];
    }
    double mean[kNormColumnBlock];
    for (int64_t j = 0; j < width; ++j) {
      mean[j] = sum[j] / static_cast<double>(n);
      sum[j] = 0.0;
    }
    // Two passes: the variance of the centred values does not lose the
    // digits that E[x^2] - E[x]^2 would.
    for (int64_t i = 0; i < n; ++i) {
      const float* row = in + i * d + c0;
      for (int64_t j = 0; j < width; ++j) {
        const double diff = row[j] - mean[j];
        sum[j] += diff * diff;
      }
    }
    float mean_f[kNormColumnBlock];
    float inv_f[kNormColumnBlock];
    for (int64_t j = 0; j < width; ++j) {
      const double var = sum[j] / static_cast<double>(n);
      mean_f[j] = static_cast<float>(mean[j]);
      inv_f[j] = static_cast<float>(1.0 / std::sqrt(var + eps));
      inv_std[c0 + j] = inv_f[j];
      mm[c0 + j] = momentum * mm[c0 + j] +
                   (1.0f - momentum) * static_cast<float>(mean[j]);
      mv[c0 + j] =
          momentum * mv[c0 + j] + (1.0f - momentum) * static_cast<float>(var);
    }
    for (int64_t i = 0; i < n; ++i) {
      const int64_t off = i * d + c0;
      for (int64_t j = 0; j < width; ++j) {
        const float h = (in[off + j] - mean_f[j]) * inv_f[j];
        xhat[off + j] = h;
        out[off + j] = g[c0 + j] * h + b[c0 + j];
      }
    }
  });
  return OkStatus();
}

Status BatchNormInfer(const Context& ctx, const Tensor& x, const Tensor& gamma,
                      const Tensor& beta, const Tensor& moving_mean,
                      const Tensor& moving_variance,
                      const BatchNormOptions& options, Tensor* y) {
  constexpr std::string_view kOp = "BatchNormInfer";
  if (x.rank() != 2) {
    return InvalidArgumentError(
        StrCat(kOp, ": x ", ShapeString(x.shape()), " must be a matrix"));
  }
  DTF_RETURN_IF_ERROR(CheckColumnVector(kOp, "gamma", gamma, x));
  DTF_RETURN_IF_ERROR(CheckColumnVector(kOp, "beta", beta, x));
  DTF_RETURN_IF_ERROR(CheckColumnVector(kOp, "moving_mean", moving_mean, x));
  DTF_RETURN_IF_ERROR(
      CheckColumnVector(kOp, "moving_variance", moving_variance, x));
  for (const Tensor* t : {&x, &gamma, &beta, &moving_mean, &moving_variance}) {
    DTF_RETURN_IF_ERROR(internal::CheckDevice(ctx, t->device(), kOp));
  }
  const int64_t n = x.rows();
  const int64_t d = x.cols();
  if (y != &x) internal::PlaceOutput(ctx, y, x.shape());
  DTF_CUDA_DISPATCH(ctx, cuda::BatchNormInfer(ctx, x, gamma, beta, moving_mean,
                                              moving_variance, options, y));
  const float* in = x.data();
  const float* g = gamma.data();
  const float* b = beta.data();
  const float* mm = moving_mean.data();
  const float* mv = moving_variance.data();
  float* out = y->data();
  const double eps = options.epsilon;
  ForColumnBlocks(ctx, n, d, [&](int64_t c0, int64_t width) {
    float scale[kNormColumnBlock];
    for (int64_t j = 0; j < width; ++j) {
      scale[j] = static_cast<float>(g[c0 + j] / std::sqrt(mv[c0 + j] + eps));
    }
    for (int64_t i = 0; i < n; ++i) {
      const int64_t off = i * d + c0;
      for (int64_t j = 0; j < width; ++j) {
        out[off + j] = (in[off + j] - mm[c0 + j]) * scale[j] + b[c0 + j];
      }
    }
  });
  return OkStatus();
}

Status BatchNormGrad(const Context& ctx, const Tensor& dy, const Tensor& gamma,
                     const BatchNormCache& cache, Tensor* dx, Tensor* dgamma,
                     Tensor* dbeta) {
  constexpr std::string_view kOp = "BatchNormGrad";
  if (dy.rank() != 2 || dy.rows() < 1 || dy.shape() != cache.xhat.shape()) {
    return InvalidArgumentError(StrCat(
        kOp, ": dy ", ShapeString(dy.shape()), " does not match the cached x ",
        ShapeString(cache.xhat.shape()), " or has no rows"));
  }
  DTF_RETURN_IF_ERROR(CheckColumnVector(kOp, "gamma", gamma, dy));
  DTF_RETURN_IF_ERROR(CheckColumnVector(kOp, "inv_std", cache.inv_std, dy));
  if (dgamma == dbeta) {
    return InvalidArgumentError(
        StrCat(kOp, ": dgamma and dbeta are one tensor"));
  }
  for (const Tensor* out : {dgamma, dbeta}) {
    if (out == &dy || out == &gamma || out == &cache.xhat ||
        out == &cache.inv_std || out == dx) {
      return InvalidArgumentError(
          StrCat(kOp, ": dgamma and dbeta must not alias an input or dx"));
    }
  }
  if (dx == &gamma || dx == &cache.inv_std) {
    return InvalidArgumentError(
        StrCat(kOp, ": dx must not be gamma or the cached inv_std"));
  }
  for (const Tensor* t : {&dy, &gamma, &cache.xhat, &cache.inv_std}) {
    DTF_RETURN_IF_ERROR(internal::CheckDevice(ctx, t->device(), kOp));
  }
  const int64_t n = dy.rows();
  const int64_t d = dy.cols();
  // dx may be dy or the cached xhat (read and written element by element);
  // otherwise it is a pure output.
  if (dx != &dy && dx != &cache.xhat) {
    internal::PlaceOutput(ctx, dx, dy.shape());
  }
  internal::PlaceOutput(ctx, dgamma, {d});
  internal::PlaceOutput(ctx, dbeta, {d});
  DTF_CUDA_DISPATCH(
      ctx, cuda::BatchNormGrad(ctx, dy, gamma, cache, dx, dgamma, dbeta));
  const float* pdy = dy.data();
  const float* g = gamma.data();
  const float* xhat = cache.xhat.data();
  const float* inv_std = cache.inv_std.data();
  float* out = dx->data();
  float* dg = dgamma->data();
  float* db = dbeta->data();
  ForColumnBlocks(ctx, n, d, [&](int64_t c0, int64_t width) {
    double sum_dy[kNormColumnBlock] = {};
    double sum_dy_xhat[kNormColumnBlock] = {};
    for (int64_t i = 0; i < n; ++i) {
      const int64_t off = i * d + c0;
      for (int64_t j = 0; j < width; ++j) {
        sum_dy[j] += pdy[off + j];
        sum_dy_xhat[j] += static_cast<double>(pdy[off + j]) * xhat[off + j];
      }
    }
    // dx = gamma * inv_std * (dy - mean(dy) - xhat * mean(dy * xhat)).
    float scale[kNormColumnBlock];
    float mean_dy[kNormColumnBlock];
    float mean_dy_xhat[kNormColumnBlock];
    for (int64_t j = 0; j < width; ++j) {
      scale[j] = g[c0 + j] * inv_std[c0 + j];
      mean_dy[j] = static_cast<float>(sum_dy[j] / static_cast<double>(n));
      mean_dy_xhat[j] =
          static_cast<float>(sum_dy_xhat[j] / static_cast<double>(n));
    }
    for (int64_t i = 0; i < n; ++i) {
      const int64_t off = i * d + c0;
      for (int64_t j = 0; j < width; ++j) {
        out[off + j] = scale[j] * (pdy[off + j] - mean_dy[j] -
                                   xhat[off + j] * mean_dy_xhat[j]);
      }
    }
    for (int64_t j = 0; j < width; ++j) {
      dg[c0 + j] = static_cast<float>(sum_dy_xhat[j]);
      db[c0 + j] = static_cast<float>(sum_dy[j]);
    }
  });
  return OkStatus();
}

}  // namespace dtf::kernels
