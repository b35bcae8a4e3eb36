#include "lib/kernels/adagrad.h"

#include <cmath>

#include "lib/base/strings.h"
#include "lib/kernels/cuda/optimizers.h"
#include "lib/kernels/internal/apply.h"
#include "lib/kernels/internal/dispatch.h"

namespace dtf::kernels {
namespace {

struct AdagradKernel {
  float lr;
  float epsilon;

  // The same update for the CUDA kernel.
  cuda::AdagradUpdate CudaUpdate() const { return {lr, epsilon}; }

  void operator()(float* w, const float* g, float* a, float*, int64_t n) const {
    for (int64_t i = 0; i < n; ++i) {
      a[i] += g[i] * g[i];
      w[i] -= lr * g[i] / (std::sqrt(a[i]) + epsilon);
    }
  }
};

}  // namespace

StatusOr<std::unique_ptr<Adagrad>> Adagrad::Create(
    const AdagradOptions& options) {
  if (!std::isfinite(options.learning_rate)) {
    return InvalidArgumentError(
        StrCat("Adagrad: learning_rate is ", options.learning_rate));
  }
  if (!(options.initial_accumulator_value >= 0.0f)) {
    return InvalidArgumentError(StrCat("Adagrad: initial_accumulator_value is ",
                                       options.initial_accumulator_value,
                                       ", must be >= 0"));
  }
  if (!(options.epsilon >= 0.0f)) {
    return InvalidArgumentError(
        StrCat("Adagrad: epsilon is ", options.epsilon, ", must be >= 0"));
  }
  return std::unique_ptr<Adagrad>(new Adagrad(options));
}

OptimizerState Adagrad::CreateState(std::span<const int64_t> shape) const {
  const SlotSpec slots[] = {
      {"accumulator", options_.initial_accumulator_value}};
  return MakeState(shape, slots);
}

Status Adagrad::ApplyDense(const Context& ctx, Tensor* param,
                           const Tensor& grad, OptimizerState* state) const {
  DTF_RETURN_IF_ERROR(
      internal::CheckDenseApply(ctx, name(), *param, grad, *state));
  state->set_step(state->step() + 1);
  const AdagradKernel kernel{options_.learning_rate, options_.epsilon};
  DTF_CUDA_DISPATCH(
      ctx, cuda::ApplyDense(ctx, kernel.CudaUpdate(), param, grad, state));
  internal::RunDense(ctx, param, grad, state, 1.0, kernel);
  return OkStatus();
}

Status Adagrad::ApplySparse(const Context& ctx, Tensor* param,
                            const SparseGrad& grad,
                            OptimizerState* state) const {
  DTF_RETURN_IF_ERROR(
      internal::CheckSparseApply(ctx, name(), *param, grad, *state));
  state->set_step(state->step() + 1);
  const AdagradKernel kernel{options_.learning_rate, options_.epsilon};
  DTF_CUDA_DISPATCH(
      ctx, cuda::ApplySparse(ctx, kernel.CudaUpdate(), param, grad, state));
  internal::RunSparse(ctx, param, grad, state, 1.0, kernel);
  return OkStatus();
}

}  // namespace dtf::kernels
