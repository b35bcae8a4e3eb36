#include <algorithm>

#include "lib/kernels/cuda/cublas.h"
#include "lib/kernels/cuda/cuda_state.h"
#include "lib/kernels/cuda/dense.h"
#include "lib/kernels/cuda/launch.h"

namespace dtf::kernels::cuda {
namespace {

using internal::kThreadsPerBlock;

// Rows per partial sum in BiasAddGrad's first pass.
constexpr int64_t kRowsPerChunk = 64;

__global__ void BiasAddKernel(const float* bias, float* x, int64_t rows,
                              int64_t cols) {
  DTF_CUDA_LOOP(i, rows * cols) { x[i] += bias[i % cols]; }
}

// partial[c, j] = sum of dy[i, j] over the rows i of chunk c, in row order.
__global__ void ColumnChunkSums(const float* dy, int64_t rows, int64_t cols,
                                float* partial) {
  const int64_t chunks = (rows + kRowsPerChunk - 1) / kRowsPerChunk;
  DTF_CUDA_LOOP(t, chunks * cols) {
    const int64_t c = t / cols;
    const int64_t j = t % cols;
    const int64_t end = min(rows, (c + 1) * kRowsPerChunk);
    float sum = 0.0f;
    for (int64_t i = c * kRowsPerChunk; i < end; ++i) sum += dy[i * cols + j];
    partial[t] = sum;
  }
}

// dbias[j] = sum over chunks c, in order, of partial[c, j].
__global__ void SumChunks(const float* partial, int64_t chunks, int64_t cols,
                          float* dbias) {
  DTF_CUDA_LOOP(j, cols) {
    float sum = 0.0f;
    for (int64_t c = 0; c < chunks; ++c) sum += partial[c * cols + j];
    dbias[j] = sum;
  }
}

}  // namespace

Status MatMul(const Context& ctx, const Tensor& a, const Tensor& b, Tensor* c,
              int64_t m, int64_t n, int64_t k, const MatMulOptions& options) {
  internal::StreamFor(ctx);
  if (m == 0 || n == 0) return OkStatus();
  internal::CudaState& state = internal::CudaStateOf(ctx);
  const internal::CublasApi& api = *state.cublas_api;
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLAS
  // reads each row-major operand as its transpose, so B comes first and each
  // keeps its own transpose flag.
  const cublasOperation_t op_a =
      options.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b =
      options.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  // Leading dimensions are at least 1 even for an empty operand (k == 0,
  // where SGEMM computes C = beta * C).
  const int lda = int(std::max<int64_t>(1, a.cols()));
  const int ldb = int(std::max<int64_t>(1, b.cols()));
  const float alpha = options.alpha;
  const float beta = options.beta;
  return internal::CublasError(
      api,
      api.sgemm(static_cast<cublasHandle_t>(state.cublas), op_b, op_a, int(n),
                int(m), int(k), &alpha, b.data(), ldb, a.data(), lda, &beta,
                c->data(), int(n)),
      "MatMul (cublasSgemm)");
}

Status BiasAdd(const Context& ctx, const Tensor& bias, Tensor* x) {
  cudaStream_t stream = internal::StreamFor(ctx);
  const int64_t n = x->size();
  if (n == 0) return OkStatus();
  BiasAddKernel<<<internal::BlocksFor(n), kThreadsPerBlock, 0, stream>>>(
      bias.data(), x->data(), x->rows(), x->cols());
  return internal::LaunchError("BiasAdd");
}

Status BiasAddGrad(const Context& ctx, const Tensor& dy, Tensor* dbias) {
  cudaStream_t stream = internal::StreamFor(ctx);
  const int64_t rows = dy.rows();
  const int64_t cols = dy.cols();
  if (cols == 0) return OkStatus();
  const int64_t chunks =
      std::max<int64_t>(1, (rows + kRowsPerChunk - 1) / kRowsPerChunk);
  float* partial = static_cast<float*>(internal::CudaStateOf(ctx).DeviceScratch(
      size_t(chunks * cols) * sizeof(float)));
  if (rows == 0) {
    DTF_RETURN_IF_ERROR(internal::CudaError(
        cudaMemsetAsync(dbias->data(), 0, size_t(cols) * sizeof(float), stream),
        "BiasAddGrad"));
    return OkStatus();
  }
  ColumnChunkSums<<<internal::BlocksFor(chunks * cols), kThreadsPerBlock, 0,
                    stream>>>(dy.data(), rows, cols, partial);
  DTF_RETURN_IF_ERROR(internal::LaunchError("BiasAddGrad"));
  SumChunks<<<internal::BlocksFor(cols), kThreadsPerBlock, 0, stream>>>(
      partial, chunks, cols, dbias->data());
  return internal::LaunchError("BiasAddGrad");
}

}  // namespace dtf::kernels::cuda
