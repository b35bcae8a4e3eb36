// The two CPU paths of MatMul, each in its own file because each is a large
// Eigen instantiation: GEMM on the calling thread (cpu_gemm.cc) and the
// tensor contraction on the context's thread pool (cpu_contract.cc). Both
// take operands MatMul has already checked.
#pragma once

#include "lib/kernels/context.h"
#include "lib/kernels/dense.h"
#include "lib/kernels/tensor.h"

namespace dtf::kernels::internal {

// C = alpha * op(A) * op(B) + beta * C on the calling thread.
void GemmOnCaller(const Tensor& a, const Tensor& b, const MatMulOptions& o,
                  Tensor* c);

// The same on the context's thread pool (ctx.num_threads() > 1).
void ContractOnPool(const Context& ctx, const Tensor& a, const Tensor& b,
                    const MatMulOptions& o, Tensor* c);

}  // namespace dtf::kernels::internal
