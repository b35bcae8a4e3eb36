// Dropout and its gradient. The mask's bits come from
// internal::DropoutKeep (cuda/elementwise.h), which the CUDA kernel shares,
// so a seed gives one mask on either device.
#include "lib/kernels/dropout.h"

#include <cstdint>
#include <string_view>

#include "lib/base/strings.h"
#include "lib/kernels/cuda/elementwise.h"
#include "lib/kernels/internal/dispatch.h"
#include "lib/kernels/internal/parallel.h"

namespace dtf::kernels {
namespace {

// Cost per element, in cycles, of hashing its index and scaling it.
constexpr double kDropoutCycles = 4.0;

}  // namespace

Status Dropout(const Context& ctx, const Tensor& x, float rate, uint64_t seed,
               Tensor* y, Tensor* mask) {
  constexpr std::string_view kOp = "Dropout";
  if (!(rate >= 0.0f && rate < 1.0f)) {
    return InvalidArgumentError(
        StrCat(kOp, ": rate ", rate, " is not in [0, 1)"));
  }
  if (mask == &x || mask == y) {
    return InvalidArgumentError(StrCat(kOp, ": mask must not be x or y"));
  }
  DTF_RETURN_IF_ERROR(internal::CheckDevice(ctx, x.device(), kOp));
  if (y != &x) internal::PlaceOutput(ctx, y, x.shape());
  internal::PlaceOutput(ctx, mask, x.shape());
  const internal::DropoutDraw draw = internal::MakeDropoutDraw(rate, seed);
  DTF_CUDA_DISPATCH(ctx, cuda::Dropout(ctx, x, draw, y, mask));
  const float* in = x.data();
  float* out = y->data();
  float* m = mask->data();
  internal::ParallelFor(ctx, x.size(), kDropoutCycles,
                        [&](int64_t lo, int64_t hi) {
                          // A copy of its own, which the stores below
                          // cannot alias.
                          const internal::DropoutDraw local = draw;
                          for (int64_t i = lo; i < hi; ++i) {
                            const float keep = internal::DropoutKeep(local, i);
                            m[i] = keep;
                            out[i] = in[i] * keep;
                          }
                        });
  return OkStatus();
}

Status DropoutGrad(const Context& ctx, const Tensor& dy, const Tensor& mask,
                   Tensor* dx) {
  constexpr std::string_view kOp = "DropoutGrad";
  if (dy.shape() != mask.shape()) {
    return InvalidArgumentError(StrCat(kOp, ": dy ", ShapeString(dy.shape()),
                                       " and mask ", ShapeString(mask.shape()),
                                       " differ in shape"));
  }
  DTF_RETURN_IF_ERROR(internal::CheckDevice(ctx, dy.device(), kOp));
  DTF_RETURN_IF_ERROR(internal::CheckDevice(ctx, mask.device(), kOp));
  if (dx != &dy && dx != &mask) internal::PlaceOutput(ctx, dx, dy.shape());
  DTF_CUDA_DISPATCH(ctx, cuda::DropoutGrad(ctx, dy, mask, dx));
  const float* g = dy.data();
  const float* m = mask.data();
  float* out = dx->data();
  internal::ParallelFor(ctx, dy.size(), internal::kStreamingCycles,
                        [&](int64_t lo, int64_t hi) {
                          for (int64_t i = lo; i < hi; ++i) {
                            out[i] = g[i] * m[i];
                          }
                        });
  return OkStatus();
}

}  // namespace dtf::kernels
