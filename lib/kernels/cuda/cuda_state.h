// The CUDA side of a Context: the device, its stream, the cuBLAS handle and
// scratch space, and the translation of CUDA errors into Status. Included by
// the CUDA implementations in this directory only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string_view>

#include "lib/base/status.h"
#include "lib/kernels/internal/cuda_memory.h"

namespace dtf::kernels::internal {

struct CublasApi;

struct CudaState {
  CudaState() = default;
  CudaState(const CudaState&) = delete;
  CudaState& operator=(const CudaState&) = delete;
  ~CudaState();

  // Scratch space one kernel call uses and is done with before the next
  // call on this context starts (partial sums, a loss's scalar). Grows as
  // asked; growing waits for the device, so nothing queued still uses the
  // old space. Contents are unspecified.
  void* DeviceScratch(size_t bytes);
  // Pinned host memory, for values a kernel hands back to the host.
  void* HostScratch(size_t bytes);

  int ordinal = 0;
  cudaStream_t stream = nullptr;
  const CublasApi* cublas_api = nullptr;
  void* cublas = nullptr;  // cublasHandle_t

 private:
  void* device_scratch_ = nullptr;
  size_t device_scratch_bytes_ = 0;
  void* host_scratch_ = nullptr;
  size_t host_scratch_bytes_ = 0;
};

// OK for cudaSuccess; otherwise Internal (ResourceExhausted for a missing
// driver or device, and for out-of-memory) naming `what` and CUDA's
// own description.
Status CudaError(cudaError_t error, std::string_view what);

// The error of the last kernel launch on this thread, as CudaError.
Status LaunchError(std::string_view what);

// Makes the context's device current on the calling thread and returns its
// stream: the first thing every CUDA kernel entry point does.
cudaStream_t StreamFor(const Context& ctx);

}  // namespace dtf::kernels::internal
