// MatMul: checks, then Eigen's GEMM on the calling thread for small products
// (cpu_gemm.cc), Eigen's tensor contraction on the context's thread pool for
// large ones (cpu_contract.cc), cuBLAS on a CUDA context (cuda/dense.cu).
#include <algorithm>
#include <cstdint>

#include "lib/base/strings.h"
#include "lib/kernels/cuda/dense.h"
#include "lib/kernels/dense.h"
#include "lib/kernels/internal/cpu_gemm.h"
#include "lib/kernels/internal/dispatch.h"
#include "lib/kernels/internal/parallel.h"

namespace dtf::kernels {
namespace {

// Products with fewer multiply-adds than this stay on the calling thread
// (about 50-100 us of work; a pool round trip costs a few us per thread).
constexpr int64_t kMinParallelMacs = int64_t{1} << 22;

}  // namespace

Status MatMul(const Context& ctx, const Tensor& a, const Tensor& b, Tensor* c,
              const MatMulOptions& options) {
  if (a.rank() != 2 || b.rank() != 2) {
    return InvalidArgumentError(StrCat("MatMul: A ", ShapeString(a.shape()),
                                       " and B ", ShapeString(b.shape()),
                                       " must both be matrices"));
  }
  DTF_RETURN_IF_ERROR(internal::CheckDevice(ctx, a.device(), "MatMul: A"));
  DTF_RETURN_IF_ERROR(internal::CheckDevice(ctx, b.device(), "MatMul: B"));
  const int64_t m = options.transpose_a ? a.cols() : a.rows();
  const int64_t k = options.transpose_a ? a.rows() : a.cols();
  const int64_t kb = options.transpose_b ? b.cols() : b.rows();
  const int64_t n = options.transpose_b ? b.rows() : b.cols();
  if (k != kb) {
    return InvalidArgumentError(StrCat(
        "MatMul: inner dimensions differ: op(A) is [", m, ", ", k,
        "], op(B) is [", kb, ", ", n, "] (transpose_a=", options.transpose_a,
        ", transpose_b=", options.transpose_b, ")"));
  }
  if (options.beta == 0.0f) {
    if (c == &a || c == &b) {
      return InvalidArgumentError("MatMul: C must not alias A or B");
    }
    internal::PlaceOutput(ctx, c, {m, n});
  } else {
    DTF_RETURN_IF_ERROR(internal::CheckDevice(ctx, c->device(), "MatMul: C"));
    if (c->rank() != 2 || c->rows() != m || c->cols() != n) {
      return InvalidArgumentError(StrCat("MatMul: with beta != 0, C must be [",
                                         m, ", ", n, "], is ",
                                         ShapeString(c->shape())));
    }
  }
  if (c->size() == 0) return OkStatus();
  if (c->data() == a.data() || c->data() == b.data()) {
    return InvalidArgumentError("MatMul: C must not alias A or B");
  }
  DTF_CUDA_DISPATCH(ctx, cuda::MatMul(ctx, a, b, c, m, n, k, options));
  if (k == 0) {
    float* out = c->data();
    for (int64_t i = 0; i < c->size(); ++i) {
      out[i] = options.beta == 0.0f ? 0.0f : options.beta * out[i];
    }
    return OkStatus();
  }
  if (ctx.num_threads() > 1 && m * n * k >= kMinParallelMacs) {
    internal::ContractOnPool(ctx, a, b, options, c);
  } else {
    internal::GemmOnCaller(a, b, options, c);
  }
  return OkStatus();
}

}  // namespace dtf::kernels
