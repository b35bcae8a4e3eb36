// MatMul: Eigen's GEMM on the calling thread for small products, Eigen's
// tensor contraction on the context's thread pool for large ones, cuBLAS on
// a CUDA context (cuda/dense.cu).
#include <algorithm>
#include <cstdint>

#include "lib/base/strings.h"
#include "lib/kernels/cuda/dense.h"
#include "lib/kernels/dense.h"
#include "lib/kernels/internal/cpu_context.h"
#include "lib/kernels/internal/dispatch.h"
#include "lib/kernels/internal/parallel.h"

namespace dtf::kernels {
namespace {

// Products with fewer multiply-adds than this stay on the calling thread
// (about 50-100 us of work; a pool round trip costs a few us per thread).
constexpr int64_t kMinParallelMacs = int64_t{1} << 22;

using RowMatrix =
    Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMatrixMap = Eigen::Map<const RowMatrix>;
using MatrixMap = Eigen::Map<RowMatrix>;
using ConstTensorMap =
    Eigen::TensorMap<Eigen::Tensor<const float, 2, Eigen::RowMajor>>;
using TensorMap = Eigen::TensorMap<Eigen::Tensor<float, 2, Eigen::RowMajor>>;

// Multiplies each finished block of the contraction's output by alpha while
// it is still in cache.
struct ScaleOutputKernel {
  float alpha;
  template <typename Index, typename Scalar>
  EIGEN_ALWAYS_INLINE void operator()(
      const Eigen::internal::blas_data_mapper<Scalar, Index, Eigen::ColMajor>&
          out,
      const Eigen::TensorContractionParams&, Index, Index, Index num_rows,
      Index num_cols) const {
    for (Index col = 0; col < num_cols; ++col) {
      Scalar* p = &out(0, col);
      for (Index row = 0; row < num_rows; ++row) p[row] *= alpha;
    }
  }
};

template <typename OpA, typename OpB>
void Gemm(const OpA& a, const OpB& b, float alpha, float beta, MatrixMap& c) {
  if (beta == 0.0f) {
    c.noalias() = alpha * a * b;
    return;
  }
  if (beta != 1.0f) c *= beta;
  c.noalias() += alpha * a * b;
}

void GemmOnCaller(const Tensor& a, const Tensor& b, const MatMulOptions& o,
                  Tensor* c) {
  ConstMatrixMap ma(a.data(), a.rows(), a.cols());
  ConstMatrixMap mb(b.data(), b.rows(), b.cols());
  MatrixMap mc(c->data(), c->rows(), c->cols());
  if (!o.transpose_a && !o.transpose_b) {
    Gemm(ma, mb, o.alpha, o.beta, mc);
  } else if (!o.transpose_a) {
    Gemm(ma, mb.transpose(), o.alpha, o.beta, mc);
  } else if (!o.transpose_b) {
    Gemm(ma.transpose(), mb, o.alpha, o.beta, mc);
  } else {
    Gemm(ma.transpose(), mb.transpose(), o.alpha, o.beta, mc);
  }
}

void ContractOnPool(const Context& ctx, const Tensor& a, const Tensor& b,
                    const MatMulOptions& o, Tensor* c) {
  const Eigen::ThreadPoolDevice& device = *ctx.impl().pool_device;
  ConstTensorMap ta(a.data(), a.rows(), a.cols());
  ConstTensorMap tb(b.data(), b.rows(), b.cols());
  const Eigen::array<Eigen::IndexPair<Eigen::Index>, 1> dims = {
      Eigen::IndexPair<Eigen::Index>(o.transpose_a ? 0 : 1,
                                     o.transpose_b ? 1 : 0)};
  if (o.beta == 0.0f) {
    TensorMap tc(c->data(), c->rows(), c->cols());
    if (o.alpha == 1.0f) {
      tc.device(device) = ta.contract(tb, dims);
    } else {
      tc.device(device) = ta.contract(tb, dims, ScaleOutputKernel{o.alpha});
    }
    return;
  }
  // beta != 0: the contraction overwrites its output, so it goes to a
  // temporary that is then blended into C.
  Tensor product = Tensor::Empty({c->rows(), c->cols()});
  TensorMap tp(product.data(), product.rows(), product.cols());
  tp.device(device) = ta.contract(tb, dims, ScaleOutputKernel{o.alpha});
  const float beta = o.beta;
  const float* p = product.data();
  float* out = c->data();
  internal::ParallelFor(ctx, c->size(), internal::kStreamingCycles,
                        [&](int64_t lo, int64_t hi) {
                          for (int64_t i = lo; i < hi; ++i)
                            out[i] = beta * out[i] + p[i];
                        });
}

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
    ContractOnPool(ctx, a, b, options, c);
  } else {
    GemmOnCaller(a, b, options, c);
  }
  return OkStatus();
}

}  // namespace dtf::kernels
