// The execution context every kernel takes: which device the tensors live on
// and how work is spread. On the CPU, operations small enough that a thread
// hand-off would cost more than it saves run on the calling thread; larger
// ones are split over the context's thread pool while the caller waits. On
// CUDA, a context is one device with a stream and a cuBLAS handle of its
// own: kernels are queued on the stream and return at once (outputs are
// ready once Synchronize or a copy to the host returns), except those that
// return a host value (losses, metrics), which wait for it.
//
// Thread-safety: a CPU Context may be shared by threads that call kernels
// concurrently; it holds no per-call state. A CUDA Context is used by one
// thread at a time (its scratch space is per context): one per worker.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/kernels/tensor.h"

namespace dtf::kernels {

// A CUDA device as CudaDevices lists it.
struct CudaDeviceInfo {
  int ordinal = 0;  // as Context::Cuda numbers it (after CUDA_VISIBLE_DEVICES)
  std::string name;
  int64_t memory_bytes = 0;
  int compute_major = 0;
  int compute_minor = 0;
};

// The CUDA devices this process can use. ResourceExhausted, saying why,
// when the build has no CUDA, no driver is loaded or no device is visible.
StatusOr<std::vector<CudaDeviceInfo>> CudaDevices();

class Context {
 public:
  // A CPU context using `threads` threads for large operations (the calling
  // thread included); threads <= 0 means one per hardware thread, 1 means no
  // pool at all. Aborts with a message when this CPU lacks the instruction
  // set the kernels were built for (see CpuSupportsKernels).
  static Context Cpu(int threads);
  // A context on CUDA device `ordinal` (0 is the first of
  // CUDA_VISIBLE_DEVICES) with a stream and a cuBLAS handle of its own.
  // ResourceExhausted, saying why, without CUDA, a driver, cuBLAS or the
  // device.
  static StatusOr<Context> Cuda(int ordinal);

  Context(Context&&) noexcept;
  Context& operator=(Context&&) noexcept;
  ~Context();

  Device device() const;
  // Where kernels on this context put their outputs: host memory for the
  // CPU, device memory for CUDA.
  Memory memory() const {
    return device() == Device::kCuda ? Memory::kDevice : Memory::kHost;
  }
  int num_threads() const;
  // The CUDA device ordinal; -1 on the CPU.
  int cuda_ordinal() const;
  // Waits until every kernel and copy queued on this context is done and
  // returns the first asynchronous error (a CUDA fault names the failing
  // call). OK at once on the CPU.
  Status Synchronize() const;

  // Private state, defined in lib/kernels/internal/; only kernels use it.
  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  explicit Context(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// True when this CPU has the instructions the kernels were compiled for
// (AVX2 and FMA in the default x86-64 build, see docs/kernels.md).
// Context::Cpu aborts with a message otherwise; a caller that prefers to
// report an error checks this first.
bool CpuSupportsKernels();

}  // namespace dtf::kernels
