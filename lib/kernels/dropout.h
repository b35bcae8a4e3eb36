// Inverted dropout (tf.nn.dropout, Keras' Dropout in training) for tensors
// of any shape on ctx.device(). The mask is a pure function of (seed, element
// index), so a seed reproduces it on any thread count and in any process.
// Errors: InvalidArgument for a rate outside [0, 1), mismatched shapes or
// devices.
#pragma once

#include <cstdint>

#include "lib/base/status.h"
#include "lib/kernels/context.h"
#include "lib/kernels/tensor.h"

namespace dtf::kernels {

// y = x * mask with mask[i] = 0 with probability `rate`, else 1 / (1 - rate):
// element i is dropped when the top 53 bits of
// mix(mix(seed) + (i + 1) * 0x9e3779b97f4a7c15), mix being splitmix64's
// output function, read as a fraction in [0, 1), are below rate. rate == 0
// gives y = x and a mask of ones. y and mask are resized to x's shape; y may be
// x, mask may be neither.
Status Dropout(const Context& ctx, const Tensor& x, float rate, uint64_t seed,
               Tensor* y, Tensor* mask);

// dx = dy * mask, for dy and mask of one shape; dx is resized and may be dy.
Status DropoutGrad(const Context& ctx, const Tensor& dy, const Tensor& mask,
                   Tensor* dx);

}  // namespace dtf::kernels
