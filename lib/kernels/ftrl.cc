#include "lib/kernels/ftrl.h"

#include <cmath>

#include "lib/base/strings.h"
#include "lib/kernels/cuda/optimizers.h"
#include "lib/kernels/internal/apply.h"
#include "lib/kernels/internal/dispatch.h"

namespace dtf::kernels {
namespace {

// kSqrt: learning_rate_power == -0.5, where x^-p is sqrt(x), as TensorFlow
// special-cases it.
template <bool kSqrt>
struct FtrlKernel {
  float lr;
  float lr_power;
  float l1;
  float l2;
  float l2_shrinkage;

  // The same update for the CUDA kernel, which picks sqrt as this does.
  cuda::FtrlUpdate CudaUpdate() const {
    return {lr, lr_power, l1, l2, l2_shrinkage};
  }

  float Pow(float x) const {
    if constexpr (kSqrt) {
      return std::sqrt(x);
    } else {
      return std::pow(x, -lr_power);
    }
  }

  void operator()(float* w, const float* g, float* a, float* z,
                  int64_t n) const {
    const float two_l2 = 2.0f * l2;
    const float two_shrinkage = 2.0f * l2_shrinkage;
    for (int64_t i = 0; i < n; ++i) {
      const float g_shrunk = g[i] + two_shrinkage * w[i];
      const float new_a = a[i] + g[i] * g[i];
      const float new_a_pow = Pow(new_a);
      z[i] += g_shrunk - (new_a_pow - Pow(a[i])) / lr * w[i];
      const float quadratic = new_a_pow / lr + two_l2;
      const float zi = z[i];
      // Computed unconditionally so that the loop has no branch to vectorise
      // around.
      const float shrunk = (std::copysign(l1, zi) - zi) / quadratic;
      w[i] = std::fabs(zi) > l1 ? shrunk : 0.0f;
      a[i] = new_a;
    }
  }
};

template <bool kSqrt>
FtrlKernel<kSqrt> MakeKernel(const FtrlOptions& o) {
  return FtrlKernel<kSqrt>{
      o.learning_rate, o.learning_rate_power, o.l1_regularization_strength,
      o.l2_regularization_strength + o.beta / (2.0f * o.learning_rate),
      o.l2_shrinkage_regularization_strength};
}

}  // namespace

StatusOr<std::unique_ptr<Ftrl>> Ftrl::Create(const FtrlOptions& options) {
  if (!(options.learning_rate > 0.0f) ||
      !std::isfinite(options.learning_rate)) {
    return InvalidArgumentError(StrCat("Ftrl: learning_rate is ",
                                       options.learning_rate, ", must be > 0"));
  }
  if (!(options.learning_rate_power <= 0.0f)) {
    return InvalidArgumentError(StrCat("Ftrl: learning_rate_power is ",
                                       options.learning_rate_power,
                                       ", must be <= 0"));
  }
  const struct {
    const char* name;
    float value;
  } non_negative[] = {
      {"initial_accumulator_value", options.initial_accumulator_value},
      {"l1_regularization_strength", options.l1_regularization_strength},
      {"l2_regularization_strength", options.l2_regularization_strength},
      {"l2_shrinkage_regularization_strength",
       options.l2_shrinkage_regularization_strength},
      {"beta", options.beta},
  };
  for (const auto& option : non_negative) {
    if (!(option.value >= 0.0f)) {
      return InvalidArgumentError(StrCat("Ftrl: ", option.name, " is ",
                                         option.value, ", must be >= 0"));
    }
  }
  return std::unique_ptr<Ftrl>(new Ftrl(options));
}

OptimizerState Ftrl::CreateState(std::span<const int64_t> shape) const {
  const SlotSpec slots[] = {{"accumulator", options_.initial_accumulator_value},
                            {"linear", 0.0f}};
  return MakeState(shape, slots);
}

Status Ftrl::ApplyDense(const Context& ctx, Tensor* param, const Tensor& grad,
                        OptimizerState* state) const {
  DTF_RETURN_IF_ERROR(
      internal::CheckDenseApply(ctx, name(), *param, grad, *state));
  state->set_step(state->step() + 1);
  DTF_CUDA_DISPATCH(
      ctx, cuda::ApplyDense(ctx, MakeKernel<true>(options_).CudaUpdate(), param,
                            grad, state));
  if (options_.learning_rate_power == -0.5f) {
    internal::RunDense(ctx, param, grad, state, 2.5,
                       MakeKernel<true>(options_));
  } else {
    internal::RunDense(ctx, param, grad, state, 40.0,
                       MakeKernel<false>(options_));
  }
  return OkStatus();
}

Status Ftrl::ApplySparse(const Context& ctx, Tensor* param,
                         const SparseGrad& grad, OptimizerState* state) const {
  DTF_RETURN_IF_ERROR(
      internal::CheckSparseApply(ctx, name(), *param, grad, *state));
  state->set_step(state->step() + 1);
  DTF_CUDA_DISPATCH(
      ctx, cuda::ApplySparse(ctx, MakeKernel<true>(options_).CudaUpdate(),
                             param, grad, state));
  if (options_.learning_rate_power == -0.5f) {
    internal::RunSparse(ctx, param, grad, state, 2.5,
                        MakeKernel<true>(options_));
  } else {
    internal::RunSparse(ctx, param, grad, state, 40.0,
                        MakeKernel<false>(options_));
  }
  return OkStatus();
}

}  // namespace dtf::kernels
