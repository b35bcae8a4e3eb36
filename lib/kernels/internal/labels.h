// Class-label checks shared by the losses and the metrics.
#pragma once

#include <cstdint>

#include "lib/base/status.h"
#include "lib/kernels/context.h"
#include "lib/kernels/tensor.h"

namespace dtf::kernels::internal {

// A class label outside [0, classes): its row (-1 when there is none) and
// its value.
struct BadLabel {
  int64_t row = -1;
  int64_t label = 0;
};

// The first label outside [0, classes), looked for where the labels are
// (defined in loss.cc).
StatusOr<BadLabel> FindBadLabel(const Context& ctx, const IdTensor& labels,
                                int64_t classes);

}  // namespace dtf::kernels::internal
