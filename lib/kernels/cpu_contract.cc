// MatMul on the context's thread pool: Eigen's tensor contraction (large
// products; see matmul.cc).
#include <cstdint>

#include "lib/kernels/internal/cpu_context.h"
#include "lib/kernels/internal/cpu_gemm.h"
#include "lib/kernels/internal/parallel.h"

namespace dtf::kernels::internal {
namespace {

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

}  // namespace

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
  ParallelFor(ctx, c->size(), kStreamingCycles, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) out[i] = beta * out[i] + p[i];
  });
}

}  // namespace dtf::kernels::internal
