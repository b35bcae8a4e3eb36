// lib/kernels/internal/cuda_memory.h and lib/kernels/nccl.h in a
// build without CUDA: no CUDA context can be made, so device and pinned
// memory are never asked for, and no communicator can be joined.
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "lib/base/strings.h"
#include "lib/kernels/internal/cuda_memory.h"
#include "lib/kernels/nccl.h"

namespace dtf::kernels::internal {
namespace {

constexpr char kNoCuda[] =
    "this dtf was built without CUDA (nvcc was not found when it was "
    "configured)";

[[noreturn]] void Abort(const char* what) {
  std::fprintf(stderr, "dtf: %s: %s\n", what, kNoCuda);
  std::abort();
}

}  // namespace

void* CudaAllocate(Memory, size_t) { Abort("CUDA memory"); }
void CudaFree(Memory, void*) { Abort("CUDA memory"); }
void CudaCopy(void*, const void*, size_t) { Abort("CUDA copy"); }

StatusOr<std::shared_ptr<CudaState>> CreateCudaState(int) {
  return ResourceExhaustedError(kNoCuda);
}
int CudaOrdinal(const CudaState&) { return -1; }
Status CudaCopyAsync(const Context&, void*, const void*, size_t) {
  return ResourceExhaustedError(kNoCuda);
}
Status CudaSynchronize(const Context&) {
  return ResourceExhaustedError(kNoCuda);
}
StatusOr<std::vector<CudaDeviceInfo>> ListCudaDevices() {
  return ResourceExhaustedError(kNoCuda);
}

}  // namespace dtf::kernels::internal

namespace dtf::kernels {

StatusOr<std::string> NewNcclId() {
  return ResourceExhaustedError(internal::kNoCuda);
}
StatusOr<std::unique_ptr<Collective>> JoinNccl(const Context&, std::string_view,
                                               int, int,
                                               const CollectiveLimits&) {
  return ResourceExhaustedError(internal::kNoCuda);
}

}  // namespace dtf::kernels
