#include "lib/runtime/model/optimizers.h"

#include "lib/kernels/adagrad.h"
#include "lib/kernels/adam.h"
#include "lib/kernels/ftrl.h"
#include "lib/kernels/sgd.h"

namespace dtf::runtime {

StatusOr<std::unique_ptr<kernels::Optimizer>> MakeOptimizer(
    const OptimizerSpec& spec) {
  const auto lr = static_cast<float>(spec.learning_rate);
  switch (spec.type) {
    case OptimizerType::kSgd: {
      DTF_ASSIGN_OR_RETURN(
          auto opt,
          kernels::Sgd::Create({lr, float(spec.momentum), spec.nesterov}));
      return std::unique_ptr<kernels::Optimizer>(std::move(opt));
    }
    case OptimizerType::kAdagrad: {
      DTF_ASSIGN_OR_RETURN(
          auto opt,
          kernels::Adagrad::Create({lr, float(spec.initial_accumulator_value),
                                    float(spec.epsilon)}));
      return std::unique_ptr<kernels::Optimizer>(std::move(opt));
    }
    case OptimizerType::kAdam: {
      kernels::AdamOptions options;
      options.learning_rate = lr;
      options.beta_1 = float(spec.beta1);
      options.beta_2 = float(spec.beta2);
      options.epsilon = float(spec.epsilon);
      DTF_ASSIGN_OR_RETURN(auto opt, kernels::Adam::Create(options));
      return std::unique_ptr<kernels::Optimizer>(std::move(opt));
    }
    case OptimizerType::kFtrl:
      break;
  }
  kernels::FtrlOptions options;
  options.learning_rate = lr;
  options.learning_rate_power = float(spec.learning_rate_power);
  options.initial_accumulator_value = float(spec.initial_accumulator_value);
  options.l1_regularization_strength = float(spec.l1);
  options.l2_regularization_strength = float(spec.l2);
  options.l2_shrinkage_regularization_strength = float(spec.l2_shrinkage);
  DTF_ASSIGN_OR_RETURN(auto opt, kernels::Ftrl::Create(options));
  return std::unique_ptr<kernels::Optimizer>(std::move(opt));
}

StatusOr<Optimizers> MakeOptimizers(const TrainSpec& train) {
  const OptimizerSpec& wide =
      train.optimizer ? *train.optimizer : *train.wide_optimizer;
  const OptimizerSpec& deep =
      train.optimizer ? *train.optimizer : *train.deep_optimizer;
  Optimizers o;
  DTF_ASSIGN_OR_RETURN(o.wide, MakeOptimizer(wide));
  DTF_ASSIGN_OR_RETURN(o.deep, MakeOptimizer(deep));
  return o;
}

std::vector<kernels::OptimizerState> NewOptimizerStates(
    const Optimizers& optimizers, const Model& model,
    const std::vector<std::vector<int64_t>>& shapes) {
  const std::vector<Variable>& vars = model.variables();
  std::vector<kernels::OptimizerState> states(vars.size());
  for (size_t v = 0; v < vars.size(); ++v) {
    if (vars[v].trainable) {
      states[v] = optimizers.For(vars[v].part).CreateState(shapes[v]);
    }
  }
  return states;
}

std::vector<std::vector<int64_t>> VariableShapes(const Model& model) {
  std::vector<std::vector<int64_t>> shapes;
  for (const VariableSpec& v : model.specs()) shapes.push_back(v.shape);
  return shapes;
}

}  // namespace dtf::runtime
