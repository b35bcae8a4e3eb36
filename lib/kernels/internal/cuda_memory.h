// The CUDA runtime as the rest of lib/kernels sees it: memory, copies, the
// per-context state and device listing. Free of CUDA headers; defined in
// lib/kernels/cuda/ in a build with CUDA, and by cuda_absent.cc (which
// reports that this build has no CUDA) otherwise.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "lib/base/status.h"
#include "lib/kernels/context.h"
#include "lib/kernels/tensor.h"

namespace dtf::kernels::internal {

// Device or pinned host memory; abort with a message when it cannot be had.
void* CudaAllocate(Memory memory, size_t bytes);
void CudaFree(Memory memory, void* p);
// A synchronous copy of `bytes` bytes where either side may be on the device.
void CudaCopy(void* dst, const void* src, size_t bytes);

// The stream, cuBLAS handle and scratch space of one CUDA context
// (lib/kernels/cuda/cuda_state.h).
struct CudaState;

// Sets up CUDA device `ordinal`: a stream and a cuBLAS handle of its own.
StatusOr<std::shared_ptr<CudaState>> CreateCudaState(int ordinal);
int CudaOrdinal(const CudaState& state);
// Queues a copy of `bytes` bytes on the context's stream.
Status CudaCopyAsync(const Context& ctx, void* dst, const void* src,
                     size_t bytes);
// Waits for the context's stream; the first asynchronous error, if any.
Status CudaSynchronize(const Context& ctx);
StatusOr<std::vector<CudaDeviceInfo>> ListCudaDevices();

// The CUDA state of a CUDA context (context.cc). REQUIRES: ctx.device() ==
// Device::kCuda.
CudaState& CudaStateOf(const Context& ctx);

}  // namespace dtf::kernels::internal
