// Batch normalization with Keras' BatchNormalization semantics on a [n x d]
// matrix, normalizing each of the d columns (features) over the n rows of the
// batch. gamma, beta and the moving statistics are rank-1 [d]. Column
// statistics are summed in double, split over threads by column, so results
// do not depend on the thread count. Errors: InvalidArgument for mismatched
// shapes or devices, or an empty batch in training.
#pragma once

#include "lib/base/status.h"
#include "lib/kernels/context.h"
#include "lib/kernels/tensor.h"

namespace dtf::kernels {

struct BatchNormOptions {
  // Added to the variance before its square root. Keras' default: 1e-3.
  float epsilon = 1e-3f;
  // Weight of the old moving statistics in their update. Keras' default: 0.99.
  float momentum = 0.99f;
};

// Saved by BatchNormTrain for BatchNormGrad; reused across calls.
struct BatchNormCache {
  Tensor xhat;     // [n x d]: (x - mean) * inv_std.
  Tensor inv_std;  // [d]: 1 / sqrt(variance + epsilon).
};

// Training: normalizes each column of x [n x d] by the batch mean and biased
// variance, y = gamma * xhat + beta, and updates
// moving = momentum * moving + (1 - momentum) * batch statistic for the mean
// and the (biased) variance, as Keras does for 2-D inputs. y and the cache
// are resized; y may be x (in place). REQUIRES n >= 1.
Status BatchNormTrain(const Context& ctx, const Tensor& x, const Tensor& gamma,
                      const Tensor& beta, Tensor* moving_mean,
                      Tensor* moving_variance, const BatchNormOptions& options,
                      Tensor* y, BatchNormCache* cache);

// Inference: y = gamma * (x - moving_mean) / sqrt(moving_variance + epsilon)
// + beta per column; options.momentum is unused. y is resized to x's shape and
// may be x (in place).
Status BatchNormInfer(const Context& ctx, const Tensor& x, const Tensor& gamma,
                      const Tensor& beta, const Tensor& moving_mean,
                      const Tensor& moving_variance,
                      const BatchNormOptions& options, Tensor* y);

// The backward pass of BatchNormTrain (batch statistics depend on x), given
// dy [n x d] and the cache of that call: dx [n x d], dgamma = sum_i dy * xhat
// and dbeta = sum_i dy, each resized. dx may be dy (in place).
Status BatchNormGrad(const Context& ctx, const Tensor& dy, const Tensor& gamma,
                     const BatchNormCache& cache, Tensor* dx, Tensor* dgamma,
                     Tensor* dbeta);

}  // namespace dtf::kernels
