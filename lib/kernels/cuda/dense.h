// CUDA implementations of lib/kernels/dense.h, called by its functions on a
// CUDA context once the operands were checked and the outputs sized on the
// device. MatMul runs cuBLAS's SGEMM on the context's stream.
#pragma once

#include "lib/base/status.h"
#include "lib/kernels/context.h"
#include "lib/kernels/dense.h"
#include "lib/kernels/tensor.h"

namespace dtf::kernels::cuda {

// c [M x N] = alpha * op(a) * op(b) + beta * c; every operand on the device.
Status MatMul(const Context& ctx, const Tensor& a, const Tensor& b, Tensor* c,
              int64_t m, int64_t n, int64_t k, const MatMulOptions& options);
Status BiasAdd(const Context& ctx, const Tensor& bias, Tensor* x);
Status BiasAddGrad(const Context& ctx, const Tensor& dy, Tensor* dbias);

}  // namespace dtf::kernels::cuda
