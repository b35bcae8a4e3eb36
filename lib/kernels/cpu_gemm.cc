// MatMul on the calling thread: Eigen's GEMM on row-major maps of the
// operands (small products; see matmul.cc).
#include "lib/kernels/internal/cpu_gemm.h"

#include "Eigen/Core"

namespace dtf::kernels::internal {
namespace {

using RowMatrix =
    Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMatrixMap = Eigen::Map<const RowMatrix>;
using MatrixMap = Eigen::Map<RowMatrix>;

template <typename OpA, typename OpB>
void Gemm(const OpA& a, const OpB& b, float alpha, float beta, MatrixMap& c) {
  if (beta == 0.0f) {
    c.noalias() = alpha * a * b;
    return;
  }
  if (beta != 1.0f) c *= beta;
  c.noalias() += alpha * a * b;
}

}  // namespace

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

}  // namespace dtf::kernels::internal
