#include "lib/kernels/context.h"

#include <thread>
#include <utility>

#include "lib/base/strings.h"
#include "lib/kernels/internal/cpu_context.h"
#include "lib/kernels/internal/cpu_support.h"
#include "lib/kernels/internal/cuda_memory.h"
#include "lib/kernels/internal/parallel.h"

namespace dtf::kernels {

Context::Context(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Context::Context(Context&&) noexcept = default;
Context& Context::operator=(Context&&) noexcept = default;
Context::~Context() = default;

Context Context::Cpu(int threads) {
  internal::AbortUnlessCpuSupportsKernels();
  if (threads <= 0) {
    threads = static_cast<int>(std::thread::hardware_concurrency());
    if (threads <= 0) threads = 1;
  }
  auto impl = std::make_unique<Impl>();
  impl->threads = threads;
  if (threads > 1) {
    impl->pool = std::make_unique<Eigen::ThreadPool>(threads);
    impl->pool_device =
        std::make_unique<Eigen::ThreadPoolDevice>(impl->pool.get(), threads);
  }
  return Context(std::move(impl));
}

StatusOr<Context> Context::Cuda(int ordinal) {
  if (ordinal < 0) {
    return InvalidArgumentError(
        StrCat("CUDA device ", ordinal, ": ordinals start at 0"));
  }
  DTF_ASSIGN_OR_RETURN(std::shared_ptr<internal::CudaState> state,
                       internal::CreateCudaState(ordinal));
  auto impl = std::make_unique<Impl>();
  impl->device = Device::kCuda;
  impl->cuda = std::move(state);
  return Context(std::move(impl));
}

Device Context::device() const { return impl_->device; }
int Context::num_threads() const { return impl_->threads; }

int Context::cuda_ordinal() const {
  return impl_->cuda ? internal::CudaOrdinal(*impl_->cuda) : -1;
}

Status Context::Synchronize() const {
  if (device() != Device::kCuda) return OkStatus();
  return internal::CudaSynchronize(*this);
}

StatusOr<std::vector<CudaDeviceInfo>> CudaDevices() {
  return internal::ListCudaDevices();
}

namespace internal {

CudaState& CudaStateOf(const Context& ctx) { return *ctx.impl().cuda; }

void RunOnPool(const Context& ctx, int64_t n, double cycles_per_item,
               const std::function<void(int64_t, int64_t)>& f) {
  ctx.impl().pool_device->parallelFor(
      n, Eigen::TensorOpCost(0, 0, cycles_per_item),
      [&f](Eigen::Index begin, Eigen::Index end) {
        f(static_cast<int64_t>(begin), static_cast<int64_t>(end));
      });
}

}  // namespace internal

}  // namespace dtf::kernels
