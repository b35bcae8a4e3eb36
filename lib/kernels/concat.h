// Joining and splitting matrices by columns (tf.concat / tf.split on axis 1),
// as a model does to feed several feature columns into one dense layer and
// to hand each its slice of the gradient, and an elementwise accumulate.
// Tensors are row-major 2-D float32 on ctx.device(); outputs are resized and
// must not alias an input. Errors: InvalidArgument naming the operand.
#pragma once

#include <cstdint>
#include <span>

#include "lib/base/status.h"
#include "lib/kernels/context.h"
#include "lib/kernels/tensor.h"

namespace dtf::kernels {

// out = [parts[0] | parts[1] | ...] side by side: every part is [n x c_i]
// with one n, and out is resized to [n x sum c_i]. Parts with no columns are
// allowed; there must be at least one part, and none may be null or out.
Status ConcatColumns(const Context& ctx, std::span<const Tensor* const> parts,
                     Tensor* out);

// The reverse of ConcatColumns: parts[i] is resized to [n x widths[i]] and
// gets the matching columns of x [n x sum widths]. widths and parts have one
// (>= 1) length, widths are >= 0, and the parts are distinct, not null and
// not x.
Status SplitColumns(const Context& ctx, const Tensor& x,
                    std::span<const int64_t> widths,
                    std::span<Tensor* const> parts);

// y += x elementwise, for x and y of one shape (any rank); y may be x.
Status AddInPlace(const Context& ctx, const Tensor& x, Tensor* y);

}  // namespace dtf::kernels
