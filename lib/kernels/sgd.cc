#include "lib/kernels/sgd.h"

#include <cmath>

#include "lib/base/strings.h"
#include "lib/kernels/cuda/optimizers.h"
#include "lib/kernels/internal/apply.h"
#include "lib/kernels/internal/dispatch.h"

namespace dtf::kernels {
namespace {

struct SgdKernel {
  float lr;
  float momentum;
  bool nesterov;

  // The same update for the CUDA kernel.
  cuda::SgdUpdate CudaUpdate() const { return {lr, momentum, nesterov}; }

  void operator()(float* w, const float* g, float* v, float*, int64_t n) const {
    if (v == nullptr) {
      for (int64_t i = 0; i < n; ++i) w[i] -= lr * g[i];
    } else if (!nesterov) {
      for (int64_t i = 0; i < n; ++i) {
        v[i] = momentum * v[i] - lr * g[i];
        w[i] += v[i];
      }
    } else {
      for (int64_t i = 0; i < n; ++i) {
        v[i] = momentum * v[i] - lr * g[i];
        w[i] += momentum * v[i] - lr * g[i];
      }
    }
  }
};

}  // namespace

StatusOr<std::unique_ptr<Sgd>> Sgd::Create(const SgdOptions& options) {
  if (!std::isfinite(options.learning_rate)) {
    return InvalidArgumentError(
        StrCat("SGD: learning_rate is ", options.learning_rate));
  }
  if (!(options.momentum >= 0.0f && options.momentum <= 1.0f)) {
    return InvalidArgumentError(
        StrCat("SGD: momentum is ", options.momentum, ", must be in [0, 1]"));
  }
  return std::unique_ptr<Sgd>(new Sgd(options));
}

OptimizerState Sgd::CreateState(std::span<const int64_t> shape) const {
  if (options_.momentum > 0.0f) {
    const SlotSpec slots[] = {{"momentum", 0.0f}};
    return MakeState(shape, slots);
  }
  return MakeState(shape, {});
}

Status Sgd::ApplyDense(const Context& ctx, Tensor* param, const Tensor& grad,
                       OptimizerState* state) const {
  DTF_RETURN_IF_ERROR(
      internal::CheckDenseApply(ctx, name(), *param, grad, *state));
  state->set_step(state->step() + 1);
  const SgdKernel kernel{options_.learning_rate, options_.momentum,
                         options_.nesterov};
  DTF_CUDA_DISPATCH(
      ctx, cuda::ApplyDense(ctx, kernel.CudaUpdate(), param, grad, state));
  internal::RunDense(ctx, param, grad, state, 0.25, kernel);
  return OkStatus();
}

Status Sgd::ApplySparse(const Context& ctx, Tensor* param,
                        const SparseGrad& grad, OptimizerState* state) const {
  DTF_RETURN_IF_ERROR(
      internal::CheckSparseApply(ctx, name(), *param, grad, *state));
  state->set_step(state->step() + 1);
  const SgdKernel kernel{options_.learning_rate, options_.momentum,
                         options_.nesterov};
  DTF_CUDA_DISPATCH(
      ctx, cuda::ApplySparse(ctx, kernel.CudaUpdate(), param, grad, state));
  internal::RunSparse(ctx, param, grad, state, 0.25, kernel);
  return OkStatus();
}

}  // namespace dtf::kernels
