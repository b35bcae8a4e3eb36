// CUDA implementations of lib/kernels/batch_norm.h, called by its functions
// on a CUDA context once the operands were checked and the outputs sized on
// the device. Column sums are taken in double over fixed chunks of rows and
// the chunks added in order, so results never depend on timing and match
// the CPU's double sums to float precision.
#pragma once

#include "lib/base/status.h"
#include "lib/kernels/batch_norm.h"
#include "lib/kernels/context.h"
#include "lib/kernels/tensor.h"

namespace dtf::kernels::cuda {

// Batch statistics of x [n x d] (n >= 1), y, the cache and the in-place
// update of the moving statistics; y may be x.
Status BatchNormTrain(const Context& ctx, const Tensor& x, const Tensor& gamma,
                      const Tensor& beta, Tensor* moving_mean,
                      Tensor* moving_variance, const BatchNormOptions& options,
                      Tensor* y, BatchNormCache* cache);
// y from the moving statistics; y may be x.
Status BatchNormInfer(const Context& ctx, const Tensor& x, const Tensor& gamma,
                      const Tensor& beta, const Tensor& moving_mean,
                      const Tensor& moving_variance,
                      const BatchNormOptions& options, Tensor* y);
// dx, dgamma and dbeta from dy [n x d] (n >= 1) and the training cache; dx
// may be dy or the cached xhat.
Status BatchNormGrad(const Context& ctx, const Tensor& dy, const Tensor& gamma,
                     const BatchNormCache& cache, Tensor* dx, Tensor* dgamma,
                     Tensor* dbeta);

}  // namespace dtf::kernels::cuda
