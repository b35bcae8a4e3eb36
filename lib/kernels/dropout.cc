#include "lib/kernels/dropout.h"

#include <cstdint>
#include <string_view>

#include "lib/base/strings.h"
#include "lib/kernels/internal/parallel.h"

namespace dtf::kernels {
namespace {

// Cost per element, in cycles, of hashing its index and scaling it.
constexpr double kDropoutCycles = 4.0;

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;

// splitmix64's finalizer (Steele, Lea and Flood), a bijection on 64 bits.
inline uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

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
  DTF_RETURN_IF_ERROR(internal::CheckDevice(ctx, y->device(), kOp));
  DTF_RETURN_IF_ERROR(internal::CheckDevice(ctx, mask->device(), kOp));
  if (y != &x) y->Resize(x.shape());
  mask->Resize(x.shape());
  const float* in = x.data();
  float* out = y->data();
  float* m = mask->data();
  // Drop when the 53-bit fraction is below rate, i.e. the bits are below
  // rate * 2^53 (exact in double; truncated only for rate < 2^-29).
  const uint64_t threshold =
      static_cast<uint64_t>(static_cast<double>(rate) * 9007199254740992.0);
  const float scale = 1.0f / (1.0f - rate);
  const uint64_t state = Mix(seed);
  internal::ParallelFor(
      ctx, x.size(), kDropoutCycles, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) {
          const uint64_t bits =
              Mix(state + (static_cast<uint64_t>(i) + 1) * kGolden) >> 11;
          const float keep = bits < threshold ? 0.0f : scale;
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
  DTF_RETURN_IF_ERROR(internal::CheckDevice(ctx, dx->device(), kOp));
  if (dx != &dy && dx != &mask) dx->Resize(dy.shape());
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
