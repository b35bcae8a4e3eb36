#include "lib/kernels/transfer.h"

#include <cstring>

#include "lib/kernels/internal/cuda_memory.h"
#include "lib/kernels/internal/parallel.h"

namespace dtf::kernels {
namespace {

Status Copy(const Context& ctx, void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return OkStatus();
  if (ctx.device() == Device::kCpu) {
    std::memcpy(dst, src, bytes);
    return OkStatus();
  }
  return internal::CudaCopyAsync(ctx, dst, src, bytes);
}

// Host memory for a copy's destination: pinned stays pinned.
Memory HostMemoryOf(Memory memory) {
  return memory == Memory::kDevice ? Memory::kHost : memory;
}

}  // namespace

Status CopyToDevice(const Context& ctx, const Tensor& src, Tensor* dst) {
  if (dst == &src) return OkStatus();
  internal::PlaceOutput(ctx, dst, src.shape());
  return Copy(ctx, dst->data(), src.data(), size_t(src.size()) * sizeof(float));
}

Status CopyToDevice(const Context& ctx, const IdTensor& src, IdTensor* dst) {
  if (dst == &src) return OkStatus();
  internal::PlaceOutput(ctx, dst, src.size());
  return Copy(ctx, dst->data(), src.data(),
              size_t(src.size()) * sizeof(int64_t));
}

Status CopyToDevice(const Context& ctx, const SparseIds& src, SparseIds* dst) {
  DTF_RETURN_IF_ERROR(CopyToDevice(ctx, src.ids, &dst->ids));
  DTF_RETURN_IF_ERROR(CopyToDevice(ctx, src.row_splits, &dst->row_splits));
  return CopyToDevice(ctx, src.weights, &dst->weights);
}

Status CopyToHost(const Context& ctx, const Tensor& src, Tensor* dst) {
  if (dst == &src) return ctx.Synchronize();
  dst->ResizeIn(HostMemoryOf(dst->memory()), src.shape());
  DTF_RETURN_IF_ERROR(
      Copy(ctx, dst->data(), src.data(), size_t(src.size()) * sizeof(float)));
  return ctx.Synchronize();
}

Status CopyToHost(const Context& ctx, const IdTensor& src, IdTensor* dst) {
  if (dst == &src) return ctx.Synchronize();
  dst->ResizeIn(HostMemoryOf(dst->memory()), src.size());
  DTF_RETURN_IF_ERROR(
      Copy(ctx, dst->data(), src.data(), size_t(src.size()) * sizeof(int64_t)));
  return ctx.Synchronize();
}

}  // namespace dtf::kernels
