// Context's state: Eigen's thread pool on the CPU, the CUDA state on CUDA. Only
// the files that run Eigen on the pool (context.cc, matmul.cc) include this.
#pragma once

#define EIGEN_USE_THREADS
#include <memory>

#include "lib/kernels/context.h"
#include "unsupported/Eigen/CXX11/Tensor"
#include "unsupported/Eigen/CXX11/ThreadPool"

namespace dtf::kernels {

namespace internal {
struct CudaState;
}

struct Context::Impl {
  Device device = Device::kCpu;
  int threads = 1;
  // Both null when threads == 1.
  std::unique_ptr<Eigen::ThreadPool> pool;
  std::unique_ptr<Eigen::ThreadPoolDevice> pool_device;
  // Set on a CUDA context only.
  std::shared_ptr<internal::CudaState> cuda;
};

}  // namespace dtf::kernels
