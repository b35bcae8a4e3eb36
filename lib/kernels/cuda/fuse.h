// CUDA implementations of lib/kernels/fuse.h, called by its functions on a
// CUDA context once the operands were checked and the output placed.
#pragma once

#include <cstdint>

#include "lib/base/status.h"
#include "lib/kernels/context.h"
#include "lib/kernels/tensor.h"

namespace dtf::kernels::cuda {

Status PackDense(const Context& ctx, const Tensor& grad, Tensor* bucket,
                 int64_t offset);
// cols: the table's row width (grad.rows.cols()).
Status PackSparse(const Context& ctx, const SparseGrad& grad, int64_t num_rows,
                  int64_t cols, Tensor* bucket, int64_t offset);
Status Unpack(const Context& ctx, const Tensor& bucket, int64_t offset,
              Tensor* out);

}  // namespace dtf::kernels::cuda
