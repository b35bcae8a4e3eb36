#include "lib/kernels/adam.h"

#include <cmath>

#include "lib/base/strings.h"
#include "lib/kernels/cuda/optimizers.h"
#include "lib/kernels/internal/apply.h"
#include "lib/kernels/internal/dispatch.h"

namespace dtf::kernels {
namespace {

struct AdamKernel {
  float lr_t;
  float beta_1;
  float beta_2;
  float epsilon;

  // The same update for the CUDA kernel.
  cuda::AdamUpdate CudaUpdate() const {
    return {lr_t, 1.0f - beta_1, 1.0f - beta_2, epsilon};
  }

  void operator()(float* w, const float* g, float* m, float* v,
                  int64_t n) const {
    const float one_minus_b1 = 1.0f - beta_1;
    const float one_minus_b2 = 1.0f - beta_2;
    for (int64_t i = 0; i < n; ++i) {
      m[i] += (g[i] - m[i]) * one_minus_b1;
      v[i] += (g[i] * g[i] - v[i]) * one_minus_b2;
      w[i] -= lr_t * m[i] / (std::sqrt(v[i]) + epsilon);
    }
  }
};

bool InUnitInterval(float beta) { return beta >= 0.0f && beta < 1.0f; }

}  // namespace

StatusOr<std::unique_ptr<Adam>> Adam::Create(const AdamOptions& options) {
  if (!std::isfinite(options.learning_rate)) {
    return InvalidArgumentError(
        StrCat("Adam: learning_rate is ", options.learning_rate));
  }
  if (!InUnitInterval(options.beta_1) || !InUnitInterval(options.beta_2)) {
    return InvalidArgumentError(StrCat("Adam: beta_1 is ", options.beta_1,
                                       " and beta_2 is ", options.beta_2,
                                       "; both must be in [0, 1)"));
  }
  if (!(options.epsilon >= 0.0f)) {
    return InvalidArgumentError(
        StrCat("Adam: epsilon is ", options.epsilon, ", must be >= 0"));
  }
  return std::unique_ptr<Adam>(new Adam(options));
}

OptimizerState Adam::CreateState(std::span<const int64_t> shape) const {
  const SlotSpec slots[] = {{"m", 0.0f}, {"v", 0.0f}};
  return MakeState(shape, slots);
}

float Adam::NextStepRate(OptimizerState* state) const {
  state->set_step(state->step() + 1);
  const double t = static_cast<double>(state->step());
  const double b1_power = std::pow(static_cast<double>(options_.beta_1), t);
  const double b2_power = std::pow(static_cast<double>(options_.beta_2), t);
  return static_cast<float>(options_.learning_rate * std::sqrt(1.0 - b2_power) /
                            (1.0 - b1_power));
}

Status Adam::ApplyDense(const Context& ctx, Tensor* param, const Tensor& grad,
                        OptimizerState* state) const {
  DTF_RETURN_IF_ERROR(
      internal::CheckDenseApply(ctx, name(), *param, grad, *state));
  const AdamKernel kernel{NextStepRate(state), options_.beta_1, options_.beta_2,
                          options_.epsilon};
  DTF_CUDA_DISPATCH(
      ctx, cuda::ApplyDense(ctx, kernel.CudaUpdate(), param, grad, state));
  internal::RunDense(ctx, param, grad, state, 1.5, kernel);
  return OkStatus();
}

Status Adam::ApplySparse(const Context& ctx, Tensor* param,
                         const SparseGrad& grad, OptimizerState* state) const {
  DTF_RETURN_IF_ERROR(
      internal::CheckSparseApply(ctx, name(), *param, grad, *state));
  const AdamKernel kernel{NextStepRate(state), options_.beta_1, options_.beta_2,
                          options_.epsilon};
  DTF_CUDA_DISPATCH(
      ctx, cuda::ApplySparse(ctx, kernel.CudaUpdate(), param, grad, state));
  internal::RunSparse(ctx, param, grad, state, 1.5, kernel);
  return OkStatus();
}

}  // namespace dtf::kernels
