// Class-label checks shared by the losses and the metrics.
#pragma once

#include <cstdint>

#include "lib/base/status.h"
#include "lib/kernels/context.h"
#include "lib/kernels/cuda/loss.h"
#include "lib/kernels/tensor.h"

namespace dtf::kernels::internal {

// The first label outside [0, classes), looked for where the labels are
// (defined in loss.cc).
StatusOr<cuda::BadLabel> FindBadLabel(const Context& ctx,
                                      const IdTensor& labels, int64_t classes);

}  // namespace dtf::kernels::internal
