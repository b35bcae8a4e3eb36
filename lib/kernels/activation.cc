// The activations and their gradients: Eigen's vectorised array functions
// on the CPU, split over the context's threads; cuda/elementwise.cu on CUDA.
#include "lib/kernels/activation.h"

#include <cstdint>
#include <string_view>

#include "Eigen/Core"
#include "lib/base/strings.h"
#include "lib/kernels/cuda/elementwise.h"
#include "lib/kernels/internal/dispatch.h"
#include "lib/kernels/internal/parallel.h"

namespace dtf::kernels {
namespace {

using ArrayMap = Eigen::Map<Eigen::ArrayXf>;
using ConstArrayMap = Eigen::Map<const Eigen::ArrayXf>;

// Cost per element, in cycles, of Eigen's vectorised exp-based functions.
constexpr double kTranscendentalCycles = 2.0;

// Checks x and places y (unless it is x) on the context's device.
Status PrepareUnary(const Context& ctx, std::string_view name, const Tensor& x,
                    Tensor* y) {
  DTF_RETURN_IF_ERROR(internal::CheckDevice(ctx, x.device(), name));
  if (y != &x) internal::PlaceOutput(ctx, y, x.shape());
  return OkStatus();
}

// y = f(x) over [lo, hi) with f taking and returning Eigen array blocks, on
// the CPU, once PrepareUnary has passed.
template <typename F>
Status Unary(const Context& ctx, const Tensor& x, Tensor* y, double cycles,
             F f) {
  const float* in = x.data();
  float* out = y->data();
  internal::ParallelFor(ctx, x.size(), cycles, [&](int64_t lo, int64_t hi) {
    ArrayMap(out + lo, hi - lo) = f(ConstArrayMap(in + lo, hi - lo));
  });
  return OkStatus();
}

// Checks y and dy and places dx (unless it is one of them) on the context's
// device.
Status PrepareBinary(const Context& ctx, std::string_view name, const Tensor& y,
                     const Tensor& dy, Tensor* dx) {
  if (y.shape() != dy.shape()) {
    return InvalidArgumentError(StrCat(name, ": y ", ShapeString(y.shape()),
                                       " and dy ", ShapeString(dy.shape()),
                                       " differ in shape"));
  }
  DTF_RETURN_IF_ERROR(internal::CheckDevice(ctx, y.device(), name));
  DTF_RETURN_IF_ERROR(internal::CheckDevice(ctx, dy.device(), name));
  if (dx != &y && dx != &dy) internal::PlaceOutput(ctx, dx, y.shape());
  return OkStatus();
}

// dx = f(y, dy) elementwise on the CPU, once PrepareBinary has passed.
template <typename F>
Status Binary(const Context& ctx, const Tensor& y, const Tensor& dy, Tensor* dx,
              double cycles, F f) {
  const float* py = y.data();
  const float* pdy = dy.data();
  float* out = dx->data();
  internal::ParallelFor(ctx, y.size(), cycles, [&](int64_t lo, int64_t hi) {
    ArrayMap(out + lo, hi - lo) =
        f(ConstArrayMap(py + lo, hi - lo), ConstArrayMap(pdy + lo, hi - lo));
  });
  return OkStatus();
}

}  // namespace

Status Relu(const Context& ctx, const Tensor& x, Tensor* y) {
  DTF_RETURN_IF_ERROR(PrepareUnary(ctx, "Relu", x, y));
  DTF_CUDA_DISPATCH(ctx, cuda::Relu(ctx, x, y));
  return Unary(ctx, x, y, internal::kStreamingCycles,
               [](const ConstArrayMap& v) { return v.max(0.0f); });
}

Status Sigmoid(const Context& ctx, const Tensor& x, Tensor* y) {
  DTF_RETURN_IF_ERROR(PrepareUnary(ctx, "Sigmoid", x, y));
  DTF_CUDA_DISPATCH(ctx, cuda::Sigmoid(ctx, x, y));
  return Unary(ctx, x, y, kTranscendentalCycles,
               [](const ConstArrayMap& v) { return v.logistic(); });
}

Status Tanh(const Context& ctx, const Tensor& x, Tensor* y) {
  DTF_RETURN_IF_ERROR(PrepareUnary(ctx, "Tanh", x, y));
  DTF_CUDA_DISPATCH(ctx, cuda::Tanh(ctx, x, y));
  return Unary(ctx, x, y, kTranscendentalCycles,
               [](const ConstArrayMap& v) { return v.tanh(); });
}

Status ReluGrad(const Context& ctx, const Tensor& y, const Tensor& dy,
                Tensor* dx) {
  DTF_RETURN_IF_ERROR(PrepareBinary(ctx, "ReluGrad", y, dy, dx));
  DTF_CUDA_DISPATCH(ctx, cuda::ReluGrad(ctx, y, dy, dx));
  return Binary(ctx, y, dy, dx, internal::kStreamingCycles,
                [](const ConstArrayMap& out, const ConstArrayMap& g) {
                  return (out > 0.0f).select(g, 0.0f);
                });
}

Status SigmoidGrad(const Context& ctx, const Tensor& y, const Tensor& dy,
                   Tensor* dx) {
  DTF_RETURN_IF_ERROR(PrepareBinary(ctx, "SigmoidGrad", y, dy, dx));
  DTF_CUDA_DISPATCH(ctx, cuda::SigmoidGrad(ctx, y, dy, dx));
  return Binary(ctx, y, dy, dx, internal::kStreamingCycles,
                [](const ConstArrayMap& out, const ConstArrayMap& g) {
                  return g * out * (1.0f - out);
                });
}

Status TanhGrad(const Context& ctx, const Tensor& y, const Tensor& dy,
                Tensor* dx) {
  DTF_RETURN_IF_ERROR(PrepareBinary(ctx, "TanhGrad", y, dy, dx));
  DTF_CUDA_DISPATCH(ctx, cuda::TanhGrad(ctx, y, dy, dx));
  return Binary(ctx, y, dy, dx, internal::kStreamingCycles,
                [](const ConstArrayMap& out, const ConstArrayMap& g) {
                  return g * (1.0f - out.square());
                });
}

}  // namespace dtf::kernels
