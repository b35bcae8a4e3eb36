// Gradient buckets: many gradients packed into one flat tensor so that a
// collective (lib/kernels/collective.h) moves them in one call, then
// unpacked again. A bucket is any float tensor; `offset` counts elements
// from its start. Sparse gradients are densified into their table's block
// (Horovod's sparse_as_dense), so every rank's bucket has the same layout.
#pragma once

#include <cstdint>
#include <span>

#include "lib/base/status.h"
#include "lib/kernels/context.h"
#include "lib/kernels/tensor.h"

namespace dtf::kernels {

// Copies grad's elements to bucket[offset, offset + grad.size()).
// InvalidArgument when they do not fit or an operand is on another device.
Status PackDense(const Context& ctx, const Tensor& grad, Tensor* bucket,
                 int64_t offset);

// Writes the dense form of `grad`, a gradient of a [num_rows x D] table
// (grad.rows is [U x D], grad.ids its U unique row ids), to
// bucket[offset, offset + num_rows * D): zeros, and row grad.rows[u] at row
// grad.ids[u]. InvalidArgument when it does not fit, an operand is on
// another device, or (checked on the CPU only) an id is outside
// [0, num_rows).
Status PackSparse(const Context& ctx, const SparseGrad& grad, int64_t num_rows,
                  Tensor* bucket, int64_t offset);

// *out = bucket[offset, offset + product of shape) as a tensor of `shape`,
// placed on ctx's device. InvalidArgument when that range is not inside the
// bucket.
Status Unpack(const Context& ctx, const Tensor& bucket, int64_t offset,
              std::span<const int64_t> shape, Tensor* out);

}  // namespace dtf::kernels
