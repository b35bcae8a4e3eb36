#include <cstdint>
#include <utility>

#include "lib/kernels/cuda/cuda_state.h"
#include "lib/kernels/cuda/launch.h"
#include "lib/kernels/cuda/loss.h"

namespace dtf::kernels::cuda {
namespace {

using internal::kThreadsPerBlock;

// No index of any tensor: what FirstBadLabel leaves when every label fits.
constexpr unsigned long long kNone = ~0ull;

// Keras' backend epsilon, as in metrics.cc.
constexpr double kEpsilon = 1e-7;

// partial[block] = the sum of term(i) over the block's grid-stride share of
// [0, n), in double. The grid depends on n alone, so the split is fixed.
template <typename Term>
__global__ void BlockSums(Term term, int64_t n, double* partial) {
  double sum = 0.0;
  DTF_CUDA_LOOP(i, n) { sum += term(i); }
  sum = internal::BlockSum(sum);
  if (threadIdx.x == 0) partial[blockIdx.x] = sum;
}

// *total = the sum of partial[0, blocks): thread t adds blocks t, t + 256,
// ... in order, then the block reduction adds the threads' sums. One block.
__global__ void SumBlockSums(const double* partial, int64_t blocks,
                             double* total) {
  double sum = 0.0;
  for (int64_t b = threadIdx.x; b < blocks; b += blockDim.x) sum += partial[b];
  sum = internal::BlockSum(sum);
  if (threadIdx.x == 0) *total = sum;
}

__global__ void FirstBadLabelKernel(const int64_t* labels, int64_t n,
                                    int64_t classes,
                                    unsigned long long* first) {
  DTF_CUDA_LOOP(b, n) {
    if (labels[b] < 0 || labels[b] >= classes) {
      atomicMin(first, static_cast<unsigned long long>(b));
    }
  }
}

// Copies one value from the device to the host, waiting for the stream.
template <typename T>
StatusOr<T> ReadBack(internal::CudaState& state, cudaStream_t stream,
                     const T* value, const char* what) {
  T* host = static_cast<T*>(state.HostScratch(sizeof(T)));
  DTF_RETURN_IF_ERROR(internal::CudaError(
      cudaMemcpyAsync(host, value, sizeof(T), cudaMemcpyDeviceToHost, stream),
      what));
  DTF_RETURN_IF_ERROR(internal::CudaError(cudaStreamSynchronize(stream), what));
  return *host;
}

// The sum of term(i) over i in [0, n), in double and in a fixed order.
template <typename Term>
StatusOr<double> SumTerms(const Context& ctx, int64_t n, const Term& term,
                          const char* what) {
  cudaStream_t stream = internal::StreamFor(ctx);
  if (n == 0) return 0.0;
  internal::CudaState& state = internal::CudaStateOf(ctx);
  const unsigned blocks = internal::BlocksFor(n);
  double* partial = static_cast<double*>(
      state.DeviceScratch((size_t(blocks) + 1) * sizeof(double)));
  double* total = partial + blocks;
  BlockSums<<<blocks, kThreadsPerBlock, 0, stream>>>(term, n, partial);
  DTF_RETURN_IF_ERROR(internal::LaunchError(what));
  SumBlockSums<<<1, kThreadsPerBlock, 0, stream>>>(partial, blocks, total);
  DTF_RETURN_IF_ERROR(internal::LaunchError(what));
  return ReadBack(state, stream, static_cast<const double*>(total), what);
}

// The terms, each the device twin of the CPU loop body in loss.cc or
// metrics.cc (same float operations, same comparisons for NaN).

struct SigmoidTerm {
  const float* x;
  const float* z;
  float* dx;  // null: no gradient
  float inv_n;
  __device__ double operator()(int64_t i) const {
    const float xi = x[i];
    const float zi = z[i];
    const float e = expf(-fabsf(xi));
    if (dx != nullptr) {
      const float p = xi >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
      dx[i] = (p - zi) * inv_n;
    }
    // std::max(x, 0.0f), NaN included.
    const float relu = xi < 0.0f ? 0.0f : xi;
    return relu - xi * zi + log1pf(e);
  }
};

// One row b of logits [B x C].
struct SoftmaxTerm {
  const float* x;
  const int64_t* labels;
  float* dx;  // null: no gradient
  int64_t classes;
  float inv_b;
  __device__ double operator()(int64_t b) const {
    const float* row = x + b * classes;
    float max = row[0];  // *std::max_element: replaced only by a larger one
    for (int64_t c = 1; c < classes; ++c) {
      if (max < row[c]) max = row[c];
    }
    double sum = 0.0;
    for (int64_t c = 0; c < classes; ++c) sum += expf(row[c] - max);
    const int64_t label = labels[b];
    if (dx != nullptr) {
      float* g = dx + b * classes;
      const float inv_sum = static_cast<float>(1.0 / sum);
      for (int64_t c = 0; c < classes; ++c) {
        g[c] = expf(row[c] - max) * inv_sum * inv_b;
      }
      g[label] -= inv_b;
    }
    return log(sum) - (row[label] - max);
  }
};

struct SquaredDifferenceTerm {
  const float* p;
  const float* t;
  float* dp;  // null: no gradient
  float scale;
  __device__ double operator()(int64_t i) const {
    const float d = p[i] - t[i];
    if (dp != nullptr) dp[i] = scale * d;
    return static_cast<double>(d) * d;
  }
};

struct BinaryCorrectTerm {
  const float* p;
  const float* y;
  __device__ double operator()(int64_t i) const {
    return (p[i] > 0.5f) == (y[i] > 0.5f) ? 1.0 : 0.0;
  }
};

struct LogLikelihoodTerm {
  const float* p;
  const float* y;
  __device__ double operator()(int64_t i) const {
    // std::clamp<double>(p, kEpsilon, 1 - kEpsilon), NaN included.
    double q = p[i];
    q = q < kEpsilon ? kEpsilon : (1.0 - kEpsilon < q ? 1.0 - kEpsilon : q);
    return y[i] * log(q) + (1.0 - y[i]) * log(1.0 - q);
  }
};

// One row b of scores [B x C]: 1 when its first largest score is the label's.
struct ArgmaxCorrectTerm {
  const float* scores;
  const int64_t* labels;
  int64_t classes;
  __device__ double operator()(int64_t b) const {
    const float* row = scores + b * classes;
    int64_t best = 0;
    for (int64_t c = 1; c < classes; ++c) {
      if (row[best] < row[c]) best = c;
    }
    return best == labels[b] ? 1.0 : 0.0;
  }
};

struct SquaredErrorTerm {
  const float* p;
  const float* t;
  __device__ double operator()(int64_t i) const {
    const double d = static_cast<double>(p[i]) - t[i];
    return d * d;
  }
};

}  // namespace

StatusOr<BadLabel> FindBadLabel(const Context& ctx, const IdTensor& labels,
                                int64_t classes) {
  constexpr char kWhat[] = "label check";
  cudaStream_t stream = internal::StreamFor(ctx);
  const int64_t n = labels.size();
  if (n == 0) return BadLabel{};
  internal::CudaState& state = internal::CudaStateOf(ctx);
  auto* first = static_cast<unsigned long long*>(
      state.DeviceScratch(sizeof(unsigned long long)));
  // All ones: kNone, which atomicMin lowers to the first bad row.
  DTF_RETURN_IF_ERROR(internal::CudaError(
      cudaMemsetAsync(first, 0xFF, sizeof(unsigned long long), stream), kWhat));
  FirstBadLabelKernel<<<internal::BlocksFor(n), kThreadsPerBlock, 0, stream>>>(
      labels.data(), n, classes, first);
  DTF_RETURN_IF_ERROR(internal::LaunchError(kWhat));
  DTF_ASSIGN_OR_RETURN(
      const unsigned long long row,
      ReadBack(state, stream, static_cast<const unsigned long long*>(first),
               kWhat));
  if (row == kNone) return BadLabel{};
  DTF_ASSIGN_OR_RETURN(const int64_t label,
                       ReadBack(state, stream, labels.data() + row, kWhat));
  return BadLabel{static_cast<int64_t>(row), label};
}

StatusOr<float> SigmoidCrossEntropy(const Context& ctx, const Tensor& logits,
                                    const Tensor& labels, Tensor* dlogits) {
  const int64_t n = logits.size();
  const SigmoidTerm term{logits.data(), labels.data(),
                         dlogits != nullptr ? dlogits->data() : nullptr,
                         1.0f / static_cast<float>(n)};
  DTF_ASSIGN_OR_RETURN(const double total,
                       SumTerms(ctx, n, term, "SigmoidCrossEntropy"));
  return static_cast<float>(total / static_cast<double>(n));
}

StatusOr<float> SoftmaxCrossEntropy(const Context& ctx, const Tensor& logits,
                                    const IdTensor& labels, Tensor* dlogits) {
  const int64_t batch = logits.rows();
  const SoftmaxTerm term{logits.data(), labels.data(),
                         dlogits != nullptr ? dlogits->data() : nullptr,
                         logits.cols(), 1.0f / static_cast<float>(batch)};
  DTF_ASSIGN_OR_RETURN(const double total,
                       SumTerms(ctx, batch, term, "SoftmaxCrossEntropy"));
  return static_cast<float>(total / static_cast<double>(batch));
}

StatusOr<float> MeanSquaredError(const Context& ctx, const Tensor& predictions,
                                 const Tensor& targets, Tensor* dpredictions) {
  const int64_t n = predictions.size();
  const SquaredDifferenceTerm term{
      predictions.data(), targets.data(),
      dpredictions != nullptr ? dpredictions->data() : nullptr,
      2.0f / static_cast<float>(n)};
  DTF_ASSIGN_OR_RETURN(const double total,
                       SumTerms(ctx, n, term, "MeanSquaredError"));
  return static_cast<float>(total / static_cast<double>(n));
}

Status UpdateBinaryAccuracy(const Context& ctx, const Tensor& probabilities,
                            const Tensor& labels, int64_t* correct,
                            int64_t* count) {
  const int64_t n = probabilities.size();
  DTF_ASSIGN_OR_RETURN(
      const double right,
      SumTerms(ctx, n, BinaryCorrectTerm{probabilities.data(), labels.data()},
               "BinaryAccuracy"));
  *correct += static_cast<int64_t>(right);  // a count: exact in double
  *count += n;
  return OkStatus();
}

Status UpdateLogLoss(const Context& ctx, const Tensor& probabilities,
                     const Tensor& labels, double* sum, int64_t* count) {
  const int64_t n = probabilities.size();
  DTF_ASSIGN_OR_RETURN(
      const double likelihood,
      SumTerms(ctx, n, LogLikelihoodTerm{probabilities.data(), labels.data()},
               "LogLoss"));
  *sum -= likelihood;
  *count += n;
  return OkStatus();
}

Status UpdateMulticlassAccuracy(const Context& ctx, const Tensor& scores,
                                const IdTensor& labels, int64_t* correct,
                                int64_t* count) {
  const int64_t batch = labels.size();
  DTF_ASSIGN_OR_RETURN(
      const double right,
      SumTerms(ctx, batch,
               ArgmaxCorrectTerm{scores.data(), labels.data(), scores.cols()},
               "MulticlassAccuracy"));
  *correct += static_cast<int64_t>(right);
  *count += batch;
  return OkStatus();
}

Status UpdateSquaredError(const Context& ctx, const Tensor& predictions,
                          const Tensor& targets, double* sum, int64_t* count) {
  const int64_t n = predictions.size();
  DTF_ASSIGN_OR_RETURN(
      const double squares,
      SumTerms(ctx, n, SquaredErrorTerm{predictions.data(), targets.data()},
               "SquaredError"));
  *sum += squares;
  *count += n;
  return OkStatus();
}

}  // namespace dtf::kernels::cuda
