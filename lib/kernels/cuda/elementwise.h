// CUDA implementations of the elementwise kernels (activation.h, dropout.h,
// concat.h and Normalize in feature_transforms.h), called by their public
// functions on a CUDA context once the operands were checked and the outputs
// sized on the device. Each is a grid-stride loop queued on the context's
// stream; an output that is also an input is read and written by the same
// thread, element by element, so every in-place use the CPU allows is safe.
//
// Also the dropout mask's random bits, shared by the CPU loop and the CUDA
// kernel so that both draw bit-identical masks.
#pragma once

#include <cstdint>
#include <span>

#include "lib/base/status.h"
#include "lib/kernels/context.h"
#include "lib/kernels/tensor.h"

#ifdef __CUDACC__
#define DTF_DROPOUT_HOST_DEVICE __host__ __device__
#else
#define DTF_DROPOUT_HOST_DEVICE
#endif

namespace dtf::kernels {

namespace internal {

// What Dropout draws its mask from: derived once per call from rate and
// seed (MakeDropoutDraw), then each element's bits from its index alone.
struct DropoutDraw {
  uint64_t state = 0;      // Mix(seed)
  uint64_t threshold = 0;  // rate * 2^53: elements whose bits are below drop
  float scale = 1.0f;      // 1 / (1 - rate), the kept elements' factor
};

// splitmix64's finalizer (Steele, Lea and Flood), a bijection on 64 bits.
DTF_DROPOUT_HOST_DEVICE inline uint64_t DropoutMix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

inline DropoutDraw MakeDropoutDraw(float rate, uint64_t seed) {
  DropoutDraw draw;
  draw.state = DropoutMix(seed);
  // Drop when the 53-bit fraction is below rate, i.e. the bits are below
  // rate * 2^53 (exact in double; truncated only for rate < 2^-29).
  draw.threshold =
      static_cast<uint64_t>(static_cast<double>(rate) * 9007199254740992.0);
  draw.scale = 1.0f / (1.0f - rate);
  return draw;
}

// Element i's mask value: 0 or draw.scale.
DTF_DROPOUT_HOST_DEVICE inline float DropoutKeep(const DropoutDraw& draw,
                                                 int64_t i) {
  const uint64_t bits = DropoutMix(draw.state + (static_cast<uint64_t>(i) + 1) *
                                                    0x9e3779b97f4a7c15ULL) >>
                        11;
  return bits < draw.threshold ? 0.0f : draw.scale;
}

}  // namespace internal

namespace cuda {

// y = max(x, 0); y is x or sized like it.
Status Relu(const Context& ctx, const Tensor& x, Tensor* y);
// y = 1 / (1 + exp(-x)).
Status Sigmoid(const Context& ctx, const Tensor& x, Tensor* y);
// y = tanh(x).
Status Tanh(const Context& ctx, const Tensor& x, Tensor* y);
// dx = dy where y > 0, else 0; dx may be y or dy.
Status ReluGrad(const Context& ctx, const Tensor& y, const Tensor& dy,
                Tensor* dx);
// dx = dy * y * (1 - y).
Status SigmoidGrad(const Context& ctx, const Tensor& y, const Tensor& dy,
                   Tensor* dx);
// dx = dy * (1 - y * y).
Status TanhGrad(const Context& ctx, const Tensor& y, const Tensor& dy,
                Tensor* dx);

// mask[i] = DropoutKeep(draw, i), y[i] = x[i] * mask[i]; y may be x.
Status Dropout(const Context& ctx, const Tensor& x,
               const internal::DropoutDraw& draw, Tensor* y, Tensor* mask);
// dx = dy * mask; dx may be dy or mask.
Status DropoutGrad(const Context& ctx, const Tensor& dy, const Tensor& mask,
                   Tensor* dx);

// out [n x sum of the parts' columns] = the parts side by side.
Status ConcatColumns(const Context& ctx, std::span<const Tensor* const> parts,
                     Tensor* out);
// parts[p] [n x widths[p]] = the matching columns of x.
Status SplitColumns(const Context& ctx, const Tensor& x,
                    std::span<const int64_t> widths,
                    std::span<Tensor* const> parts);
// y += x; y may be x.
Status AddInPlace(const Context& ctx, const Tensor& x, Tensor* y);

// out = (values - mean[j]) / max(stddev[j], min_stddev) for the f features
// of values' rows; mean and stddev (f each) are host arrays, uploaded here.
Status Normalize(const Context& ctx, const Tensor& values, int64_t f,
                 std::span<const float> mean, std::span<const float> stddev,
                 float min_stddev, Tensor* out);

}  // namespace cuda
}  // namespace dtf::kernels
