// The kernels optimizer for a job file's optimizer table ([train.optimizer],
// [train.wide_optimizer], [train.deep_optimizer]).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "lib/base/status.h"
#include "lib/data/train_options.h"
#include "lib/kernels/optimizer.h"
#include "lib/runtime/model/model.h"

namespace dtf::runtime {

// InvalidArgument when a hyperparameter is out of the kernel's range (the
// job file's checks make that rare).
StatusOr<std::unique_ptr<kernels::Optimizer>> MakeOptimizer(
    const OptimizerSpec& spec);

// The optimizers of a model's parts: [train.optimizer] for both, or the
// wide and deep tables of a wide_deep model.
struct Optimizers {
  std::unique_ptr<kernels::Optimizer> wide;
  std::unique_ptr<kernels::Optimizer> deep;
  const kernels::Optimizer& For(Part part) const {
    return part == Part::kWide ? *wide : *deep;
  }
};
StatusOr<Optimizers> MakeOptimizers(const TrainSpec& train);

// Fresh optimizer states parallel to model.variables(): one of `shapes[v]`
// (the variable's full shape) for each trainable variable, none for the
// others.
std::vector<kernels::OptimizerState> NewOptimizerStates(
    const Optimizers& optimizers, const Model& model,
    const std::vector<std::vector<int64_t>>& shapes);

// The whole shape of each of model.variables(), in order (Model::specs:
// also of a table that holds only some rows).
std::vector<std::vector<int64_t>> VariableShapes(const Model& model);

}  // namespace dtf::runtime
