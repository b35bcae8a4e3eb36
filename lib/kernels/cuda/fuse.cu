#include "lib/kernels/cuda/cuda_state.h"
#include "lib/kernels/cuda/fuse.h"
#include "lib/kernels/cuda/launch.h"

namespace dtf::kernels::cuda {
namespace {

using internal::kThreadsPerBlock;

// dense[ids[u], j] += rows[u, j]; ids are unique, so no two threads write
// one element.
__global__ void ScatterRows(const int64_t* ids, const float* rows, int64_t n,
                            int64_t cols, float* dense) {
  DTF_CUDA_LOOP(t, n * cols) {
    const int64_t u = t / cols;
    const int64_t j = t % cols;
    dense[ids[u] * cols + j] += rows[t];
  }
}

}  // namespace

Status PackDense(const Context& ctx, const Tensor& grad, Tensor* bucket,
                 int64_t offset) {
  return internal::CudaCopyAsync(ctx, bucket->data() + offset, grad.data(),
                                 size_t(grad.size()) * sizeof(float));
}

Status PackSparse(const Context& ctx, const SparseGrad& grad, int64_t num_rows,
                  int64_t cols, Tensor* bucket, int64_t offset) {
  cudaStream_t stream = internal::StreamFor(ctx);
  float* dense = bucket->data() + offset;
  if (num_rows * cols == 0) return OkStatus();
  DTF_RETURN_IF_ERROR(internal::CudaError(
      cudaMemsetAsync(dense, 0, size_t(num_rows * cols) * sizeof(float),
                      stream),
      "PackSparse"));
  const int64_t n = grad.ids.size();
  if (n == 0) return OkStatus();
  ScatterRows<<<internal::BlocksFor(n * cols), kThreadsPerBlock, 0, stream>>>(
      grad.ids.data(), grad.rows.data(), n, cols, dense);
  return internal::LaunchError("PackSparse");
}

Status Unpack(const Context& ctx, const Tensor& bucket, int64_t offset,
              Tensor* out) {
  return internal::CudaCopyAsync(ctx, out->data(), bucket.data() + offset,
                                 size_t(out->size()) * sizeof(float));
}

}  // namespace dtf::kernels::cuda
