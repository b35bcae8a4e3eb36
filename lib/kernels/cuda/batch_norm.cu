#include <algorithm>

#include "lib/kernels/cuda/batch_norm.h"
#include "lib/kernels/cuda/cuda_state.h"
#include "lib/kernels/cuda/launch.h"

namespace dtf::kernels::cuda {
namespace {

using internal::kThreadsPerBlock;

// Column sums run in two passes: one thread per (chunk of rows, column)
// adds its chunk's rows in order, then one thread per column adds the
// chunks in order. Chunks are at least kMinRowsPerChunk rows, and there are
// at most kMaxChunks of them so the second pass stays short for any batch.
constexpr int64_t kMinRowsPerChunk = 64;
constexpr int64_t kMaxChunks = 1024;

// How the n rows of a batch are cut into chunks: a function of n alone, so
// a batch always sums in the same order.
struct Chunking {
  explicit Chunking(int64_t n)
      : rows(std::max(kMinRowsPerChunk, (n + kMaxChunks - 1) / kMaxChunks)),
        count((n + rows - 1) / rows) {}
  int64_t rows;   // rows per chunk
  int64_t count;  // chunks, >= 1 for n >= 1
};

// partial[c * d + j] = the sum over the rows i of chunk c of x[i, j], or of
// (x[i, j] - mean[j])^2 when kCentred, in double and in row order.
template <bool kCentred>
__global__ void ChunkColumnSums(const float* x, const double* mean, int64_t n,
                                int64_t d, int64_t rows_per_chunk,
                                int64_t chunks, double* partial) {
  DTF_CUDA_LOOP(t, chunks * d) {
    const int64_t c = t / d;
    const int64_t j = t % d;
    const int64_t end = min(n, (c + 1) * rows_per_chunk);
    double sum = 0.0;
    for (int64_t i = c * rows_per_chunk; i < end; ++i) {
      if constexpr (kCentred) {
        const double diff = double(x[i * d + j]) - mean[j];
        sum += diff * diff;
      } else {
        sum += x[i * d + j];
      }
    }
    partial[t] = sum;
  }
}

// The sum over chunks, in order, of column j of partial [chunks x d].
__device__ double SumChunks(const double* partial, int64_t chunks, int64_t d,
                            int64_t j) {
  double sum = 0.0;
  for (int64_t c = 0; c < chunks; ++c) sum += partial[c * d + j];
  return sum;
}

__global__ void ColumnMeans(const double* partial, int64_t chunks, int64_t n,
                            int64_t d, double* mean) {
  DTF_CUDA_LOOP(j, d) {
    mean[j] = SumChunks(partial, chunks, d, j) / double(n);
  }
}

// From the chunks' squared deviations: the biased variance, inv_std, the
// float mean for the normalization and the moving statistics' update, in
// the CPU kernel's arithmetic.
__global__ void FinishTrainStatistics(const double* partial, const double* mean,
                                      int64_t chunks, int64_t n, int64_t d,
                                      double epsilon, float momentum,
                                      float* moving_mean,
                                      float* moving_variance, float* mean_f,
                                      float* inv_std) {
  DTF_CUDA_LOOP(j, d) {
    const double var = SumChunks(partial, chunks, d, j) / double(n);
    const float m = float(mean[j]);
    mean_f[j] = m;
    inv_std[j] = float(1.0 / sqrt(var + epsilon));
    moving_mean[j] = momentum * moving_mean[j] + (1.0f - momentum) * m;
    moving_variance[j] =
        momentum * moving_variance[j] + (1.0f - momentum) * float(var);
  }
}

// xhat and y for every element; y may be x (each element is read first).
__global__ void TrainOutput(const float* x, const float* mean_f,
                            const float* inv_std, const float* gamma,
                            const float* beta, int64_t size, int64_t d,
                            float* xhat, float* y) {
  DTF_CUDA_LOOP(i, size) {
    const int64_t j = i % d;
    const float h = (x[i] - mean_f[j]) * inv_std[j];
    xhat[i] = h;
    y[i] = gamma[j] * h + beta[j];
  }
}

// scale[j] = gamma[j] / sqrt(moving_variance[j] + epsilon), in double.
__global__ void InferScale(const float* gamma, const float* moving_variance,
                           int64_t d, double epsilon, float* scale) {
  DTF_CUDA_LOOP(j, d) {
    scale[j] = float(gamma[j] / sqrt(moving_variance[j] + epsilon));
  }
}

__global__ void InferOutput(const float* x, const float* moving_mean,
                            const float* scale, const float* beta, int64_t size,
                            int64_t d, float* y) {
  DTF_CUDA_LOOP(i, size) {
    const int64_t j = i % d;
    y[i] = (x[i] - moving_mean[j]) * scale[j] + beta[j];
  }
}

// partial_dy[c * d + j] and partial_dy_xhat[c * d + j]: the chunk's sums of
// dy and of dy * xhat (exact in double) in row order.
__global__ void ChunkGradSums(const float* dy, const float* xhat, int64_t n,
                              int64_t d, int64_t rows_per_chunk, int64_t chunks,
                              double* partial_dy, double* partial_dy_xhat) {
  DTF_CUDA_LOOP(t, chunks * d) {
    const int64_t c = t / d;
    const int64_t j = t % d;
    const int64_t end = min(n, (c + 1) * rows_per_chunk);
    double sum_dy = 0.0;
    double sum_dy_xhat = 0.0;
    for (int64_t i = c * rows_per_chunk; i < end; ++i) {
      const float g = dy[i * d + j];
      sum_dy += g;
      sum_dy_xhat += double(g) * xhat[i * d + j];
    }
    partial_dy[t] = sum_dy;
    partial_dy_xhat[t] = sum_dy_xhat;
  }
}

// dgamma, dbeta and the per-column factors of dx.
__global__ void FinishGradStatistics(const double* partial_dy,
                                     const double* partial_dy_xhat,
                                     int64_t chunks, int64_t n, int64_t d,
                                     const float* gamma, const float* inv_std,
                                     float* dgamma, float* dbeta, float* scale,
                                     float* mean_dy, float* mean_dy_xhat) {
  DTF_CUDA_LOOP(j, d) {
    const double sum_dy = SumChunks(partial_dy, chunks, d, j);
    const double sum_dy_xhat = SumChunks(partial_dy_xhat, chunks, d, j);
    scale[j] = gamma[j] * inv_std[j];
    mean_dy[j] = float(sum_dy / double(n));
    mean_dy_xhat[j] = float(sum_dy_xhat / double(n));
    dgamma[j] = float(sum_dy_xhat);
    dbeta[j] = float(sum_dy);
  }
}

// dx = gamma * inv_std * (dy - mean(dy) - xhat * mean(dy * xhat)); dx may be
// dy or xhat (each element is read first).
__global__ void GradOutput(const float* dy, const float* xhat,
                           const float* scale, const float* mean_dy,
                           const float* mean_dy_xhat, int64_t size, int64_t d,
                           float* dx) {
  DTF_CUDA_LOOP(i, size) {
    const int64_t j = i % d;
    dx[i] = scale[j] * (dy[i] - mean_dy[j] - xhat[i] * mean_dy_xhat[j]);
  }
}

}  // namespace

Status BatchNormTrain(const Context& ctx, const Tensor& x, const Tensor& gamma,
                      const Tensor& beta, Tensor* moving_mean,
                      Tensor* moving_variance, const BatchNormOptions& options,
                      Tensor* y, BatchNormCache* cache) {
  cudaStream_t stream = internal::StreamFor(ctx);
  const int64_t n = x.rows();
  const int64_t d = x.cols();
  if (n == 0 || d == 0) return OkStatus();
  const Chunking chunking(n);
  const int64_t partials = chunking.count * d;
  // Scratch: the chunks' sums, the double means, then the float means.
  char* scratch = static_cast<char*>(internal::CudaStateOf(ctx).DeviceScratch(
      size_t(partials + d) * sizeof(double) + size_t(d) * sizeof(float)));
  double* partial = reinterpret_cast<double*>(scratch);
  double* mean = partial + partials;
  float* mean_f = reinterpret_cast<float*>(mean + d);

  ChunkColumnSums<false>
      <<<internal::BlocksFor(partials), kThreadsPerBlock, 0, stream>>>(
          x.data(), nullptr, n, d, chunking.rows, chunking.count, partial);
  DTF_RETURN_IF_ERROR(internal::LaunchError("BatchNormTrain (sums)"));
  ColumnMeans<<<internal::BlocksFor(d), kThreadsPerBlock, 0, stream>>>(
      partial, chunking.count, n, d, mean);
  DTF_RETURN_IF_ERROR(internal::LaunchError("BatchNormTrain (means)"));
  // Two passes over x, as on the CPU: the variance of the centred values
  // keeps the digits that E[x^2] - E[x]^2 would lose.
  ChunkColumnSums<true>
      <<<internal::BlocksFor(partials), kThreadsPerBlock, 0, stream>>>(
          x.data(), mean, n, d, chunking.rows, chunking.count, partial);
  DTF_RETURN_IF_ERROR(internal::LaunchError("BatchNormTrain (deviations)"));
  FinishTrainStatistics<<<internal::BlocksFor(d), kThreadsPerBlock, 0,
                          stream>>>(
      partial, mean, chunking.count, n, d, double(options.epsilon),
      options.momentum, moving_mean->data(), moving_variance->data(), mean_f,
      cache->inv_std.data());
  DTF_RETURN_IF_ERROR(internal::LaunchError("BatchNormTrain (statistics)"));
  TrainOutput<<<internal::BlocksFor(n * d), kThreadsPerBlock, 0, stream>>>(
      x.data(), mean_f, cache->inv_std.data(), gamma.data(), beta.data(), n * d,
      d, cache->xhat.data(), y->data());
  return internal::LaunchError("BatchNormTrain (output)");
}

Status BatchNormInfer(const Context& ctx, const Tensor& x, const Tensor& gamma,
                      const Tensor& beta, const Tensor& moving_mean,
                      const Tensor& moving_variance,
                      const BatchNormOptions& options, Tensor* y) {
  cudaStream_t stream = internal::StreamFor(ctx);
  const int64_t n = x.rows();
  const int64_t d = x.cols();
  if (n == 0 || d == 0) return OkStatus();
  float* scale = static_cast<float*>(
      internal::CudaStateOf(ctx).DeviceScratch(size_t(d) * sizeof(float)));
  InferScale<<<internal::BlocksFor(d), kThreadsPerBlock, 0, stream>>>(
      gamma.data(), moving_variance.data(), d, double(options.epsilon), scale);
  DTF_RETURN_IF_ERROR(internal::LaunchError("BatchNormInfer (scale)"));
  InferOutput<<<internal::BlocksFor(n * d), kThreadsPerBlock, 0, stream>>>(
      x.data(), moving_mean.data(), scale, beta.data(), n * d, d, y->data());
  return internal::LaunchError("BatchNormInfer");
}

Status BatchNormGrad(const Context& ctx, const Tensor& dy, const Tensor& gamma,
                     const BatchNormCache& cache, Tensor* dx, Tensor* dgamma,
                     Tensor* dbeta) {
  cudaStream_t stream = internal::StreamFor(ctx);
  const int64_t n = dy.rows();
  const int64_t d = dy.cols();
  if (n == 0 || d == 0) return OkStatus();
  const Chunking chunking(n);
  const int64_t partials = chunking.count * d;
  // Scratch: the chunks' two sums, then three float factors per column.
  char* scratch = static_cast<char*>(internal::CudaStateOf(ctx).DeviceScratch(
      size_t(2 * partials) * sizeof(double) + size_t(3 * d) * sizeof(float)));
  double* partial_dy = reinterpret_cast<double*>(scratch);
  double* partial_dy_xhat = partial_dy + partials;
  float* scale = reinterpret_cast<float*>(partial_dy_xhat + partials);
  float* mean_dy = scale + d;
  float* mean_dy_xhat = mean_dy + d;

  ChunkGradSums<<<internal::BlocksFor(partials), kThreadsPerBlock, 0, stream>>>(
      dy.data(), cache.xhat.data(), n, d, chunking.rows, chunking.count,
      partial_dy, partial_dy_xhat);
  DTF_RETURN_IF_ERROR(internal::LaunchError("BatchNormGrad (sums)"));
  FinishGradStatistics<<<internal::BlocksFor(d), kThreadsPerBlock, 0, stream>>>(
      partial_dy, partial_dy_xhat, chunking.count, n, d, gamma.data(),
      cache.inv_std.data(), dgamma->data(), dbeta->data(), scale, mean_dy,
      mean_dy_xhat);
  DTF_RETURN_IF_ERROR(internal::LaunchError("BatchNormGrad (statistics)"));
  GradOutput<<<internal::BlocksFor(n * d), kThreadsPerBlock, 0, stream>>>(
      dy.data(), cache.xhat.data(), scale, mean_dy, mean_dy_xhat, n * d, d,
      dx->data());
  return internal::LaunchError("BatchNormGrad (dx)");
}

}  // namespace dtf::kernels::cuda
