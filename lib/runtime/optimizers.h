// The kernels optimizer for a job file's optimizer table ([train.optimizer],
// [train.wide_optimizer], [train.deep_optimizer]).
#pragma once

#include <memory>

#include "lib/base/status.h"
#include "lib/data/train_spec.h"
#include "lib/kernels/optimizer.h"

namespace dtf::runtime {

// InvalidArgument when a hyperparameter is out of the kernel's range (the
// job file's checks make that rare).
StatusOr<std::unique_ptr<kernels::Optimizer>> MakeOptimizer(
    const OptimizerSpec& spec);

}  // namespace dtf::runtime
