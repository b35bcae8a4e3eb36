// Launch helpers for the CUDA kernels of this directory (.cu files): grid
// sizes for grid-stride loops and the block reductions they share.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace dtf::kernels::internal {

inline constexpr int kThreadsPerBlock = 256;

// Blocks for a grid-stride loop over n items: enough to fill any current
// GPU, never more than the items need.
inline unsigned BlocksFor(int64_t n) {
  const int64_t blocks = (n + kThreadsPerBlock - 1) / kThreadsPerBlock;
  return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, 4096));
}

#ifdef __CUDACC__
// for (i = global thread index; i < n; i += grid size)
#define DTF_CUDA_LOOP(i, n)                                                 \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += int64_t(blockDim.x) * gridDim.x)

// The sum of `value` over the block, valid in thread 0. Every thread of the
// block calls it; blockDim.x is kThreadsPerBlock. The order of additions is
// fixed, so a result never depends on timing.
template <typename T>
__device__ T BlockSum(T value) {
  __shared__ T partial[kThreadsPerBlock / 32];
  for (int offset = 16; offset > 0; offset /= 2) {
    value += __shfl_down_sync(0xffffffffu, value, offset);
  }
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  if (lane == 0) partial[warp] = value;
  __syncthreads();
  if (warp == 0) {
    value = lane < kThreadsPerBlock / 32 ? partial[lane] : T(0);
    for (int offset = 16; offset > 0; offset /= 2) {
      value += __shfl_down_sync(0xffffffffu, value, offset);
    }
  }
  __syncthreads();
  return value;
}
#endif

}  // namespace dtf::kernels::internal
