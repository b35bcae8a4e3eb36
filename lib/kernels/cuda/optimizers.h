// CUDA implementations of the optimizers' updates (lib/kernels/sgd.h,
// adagrad.h, adam.h, ftrl.h), called by ApplyDense and ApplySparse on a CUDA
// context once the arguments were checked and the step counted. The scalar
// hyper-parameters are worked out on the host, exactly as the CPU kernels
// take them; the param, the gradient and every slot are on the device.
#pragma once

#include <cstdint>

#include "lib/base/status.h"
#include "lib/kernels/context.h"
#include "lib/kernels/optimizer.h"
#include "lib/kernels/tensor.h"

namespace dtf::kernels::cuda {

// The first fault of a sparse gradient's ids: index is -1 when the ids are
// sorted, unique and in [0, rows); otherwise the first i where ids[i] is out
// of range or not above ids[i - 1], with id = ids[i] and previous = ids[i - 1]
// (0 for i == 0).
struct SparseIdFault {
  int64_t index = -1;
  int64_t id = 0;
  int64_t previous = 0;
};

// SGD; the state's "momentum" slot, when it has one, selects the momentum
// update (nesterov or not), as on the CPU.
struct SgdUpdate {
  float lr;
  float momentum;
  bool nesterov;
};
struct AdagradUpdate {
  float lr;
  float epsilon;
};
// lr_t is this step's bias-corrected rate; one_minus_beta_* are 1 - beta_*
// rounded to float, as the CPU kernel computes them.
struct AdamUpdate {
  float lr_t;
  float one_minus_beta_1;
  float one_minus_beta_2;
  float epsilon;
};
// l2 already includes Keras' beta / (2 lr); lr_power == -0.5 takes sqrt.
struct FtrlUpdate {
  float lr;
  float lr_power;
  float l1;
  float l2;
  float l2_shrinkage;
};

// Finds the first fault of ids (on the device) for a table of `rows` rows;
// waits for the stream to read it back.
Status FindSparseIdFault(const Context& ctx, const IdTensor& ids, int64_t rows,
                         SparseIdFault* fault);

// Updates every element of *param and of the state's slots from grad.
Status ApplyDense(const Context& ctx, const SgdUpdate& update, Tensor* param,
                  const Tensor& grad, OptimizerState* state);
Status ApplyDense(const Context& ctx, const AdagradUpdate& update,
                  Tensor* param, const Tensor& grad, OptimizerState* state);
Status ApplyDense(const Context& ctx, const AdamUpdate& update, Tensor* param,
                  const Tensor& grad, OptimizerState* state);
Status ApplyDense(const Context& ctx, const FtrlUpdate& update, Tensor* param,
                  const Tensor& grad, OptimizerState* state);

// Updates rows grad.ids (already validated) of *param and of the slots from
// grad.rows.
Status ApplySparse(const Context& ctx, const SgdUpdate& update, Tensor* param,
                   const SparseGrad& grad, OptimizerState* state);
Status ApplySparse(const Context& ctx, const AdagradUpdate& update,
                   Tensor* param, const SparseGrad& grad,
                   OptimizerState* state);
Status ApplySparse(const Context& ctx, const AdamUpdate& update, Tensor* param,
                   const SparseGrad& grad, OptimizerState* state);
Status ApplySparse(const Context& ctx, const FtrlUpdate& update, Tensor* param,
                   const SparseGrad& grad, OptimizerState* state);

}  // namespace dtf::kernels::cuda
