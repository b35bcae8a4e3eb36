#include "lib/kernels/dense.h"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "lib/kernels/activation.h"
#include "lib/kernels/loss.h"
#include "tests/kernels/test_util.h"

namespace dtf::kernels {
namespace {

using testing::AsDoubles;
using testing::ExpectClose;
using testing::NumericGradient;
using testing::RandomTensor;

// op(A) * op(B) * alpha + beta * c in double, row-major [m x n].
std::vector<double> ReferenceMatMul(const Tensor& a, const Tensor& b,
                                    const MatMulOptions& o,
                                    const std::vector<double>& c) {
  const int64_t m = o.transpose_a ? a.cols() : a.rows();
  const int64_t k = o.transpose_a ? a.rows() : a.cols();
  const int64_t n = o.transpose_b ? b.rows() : b.cols();
  std::vector<double> out(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        const double av = o.transpose_a ? a[p * a.cols() + i] : a[i * k + p];
        const double bv = o.transpose_b ? b[j * b.cols() + p] : b[p * n + j];
        sum += av * bv;
      }
      const size_t idx = static_cast<size_t>(i * n + j);
      out[idx] = o.alpha * sum + (o.beta != 0.0f ? o.beta * c[idx] : 0.0);
    }
  }
  return out;
}

Tensor RandomOperand(bool transpose, int64_t rows, int64_t cols,
                     std::mt19937& rng) {
  return transpose ? RandomTensor({cols, rows}, rng)
                   : RandomTensor({rows, cols}, rng);
}

void CheckMatMul(const Context& ctx, int64_t m, int64_t k, int64_t n,
                 const MatMulOptions& o, std::mt19937& rng) {
  Tensor a = RandomOperand(o.transpose_a, m, k, rng);
  Tensor b = RandomOperand(o.transpose_b, k, n, rng);
  Tensor c = RandomTensor({m, n}, rng);
  const std::vector<double> expected = ReferenceMatMul(a, b, o, AsDoubles(c));
  ASSERT_TRUE(MatMul(ctx, a, b, &c, o).ok());
  ASSERT_EQ(c.rows(), m);
  ASSERT_EQ(c.cols(), n);
  ExpectClose(c, expected, 1e-4, 1e-4 * std::sqrt(static_cast<double>(k)),
              "MatMul");
}

TEST(MatMul, MatchesReferenceForEveryTransposeAlphaAndBeta) {
  Context ctx = Context::Cpu(1);
  std::mt19937 rng(1);
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (float beta : {0.0f, 1.0f, -0.5f}) {
        SCOPED_TRACE(::testing::Message()
                     << "ta=" << ta << " tb=" << tb << " beta=" << beta);
        CheckMatMul(ctx, 5, 7, 3, {ta, tb, 0.7f, beta}, rng);
        CheckMatMul(ctx, 32, 64, 1, {ta, tb, 1.0f, beta}, rng);
      }
    }
  }
}

TEST(MatMul, LargeProductsOnThreadsMatchReference) {
  Context ctx = Context::Cpu(4);
  std::mt19937 rng(2);
  CheckMatMul(ctx, 1024, 256, 256, {}, rng);
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "ta=" << ta << " tb=" << tb);
      CheckMatMul(ctx, 256, 128, 128, {ta, tb, 1.0f, 0.0f}, rng);
      CheckMatMul(ctx, 256, 128, 128, {ta, tb, -1.5f, 0.0f}, rng);
      CheckMatMul(ctx, 256, 128, 128, {ta, tb, 0.5f, 2.0f}, rng);
    }
  }
}

TEST(MatMul, OneAndFourThreadsAgree) {
  Context one = Context::Cpu(1);
  Context four = Context::Cpu(4);
  std::mt19937 rng(3);
  Tensor a = RandomTensor({512, 300}, rng);
  Tensor b = RandomTensor({300, 200}, rng);
  Tensor c1, c4;
  ASSERT_TRUE(MatMul(one, a, b, &c1).ok());
  ASSERT_TRUE(MatMul(four, a, b, &c4).ok());
  testing::ExpectTensorsNear(c4, c1, 1e-5);
}

TEST(MatMul, BetaZeroNeverReadsTheOutput) {
  Context ctx = Context::Cpu(1);
  std::mt19937 rng(4);
  Tensor a = RandomTensor({3, 4}, rng);
  Tensor b = RandomTensor({4, 2}, rng);
  Tensor c = Tensor::Filled({3, 2}, std::numeric_limits<float>::quiet_NaN());
  ASSERT_TRUE(MatMul(ctx, a, b, &c).ok());
  for (float v : c.span()) EXPECT_FALSE(std::isnan(v));
}

TEST(MatMul, EmptyInnerDimensionScalesC) {
  Context ctx = Context::Cpu(1);
  Tensor a = Tensor::Empty({2, 0});
  Tensor b = Tensor::Empty({0, 3});
  Tensor c = Tensor::Filled({2, 3}, 4.0f);
  ASSERT_TRUE(MatMul(ctx, a, b, &c, {.beta = 0.5f}).ok());
  for (float v : c.span()) EXPECT_EQ(v, 2.0f);
  ASSERT_TRUE(MatMul(ctx, a, b, &c).ok());
  for (float v : c.span()) EXPECT_EQ(v, 0.0f);
}

TEST(MatMul, RejectsBadShapesAndAliasing) {
  Context ctx = Context::Cpu(1);
  std::mt19937 rng(5);
  Tensor a = RandomTensor({3, 4}, rng);
  Tensor b = RandomTensor({5, 2}, rng);
  Tensor c;
  Status s = MatMul(ctx, a, b, &c);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(Message(s).find("inner dimensions"), std::string::npos) << s;
  Tensor b_transposed = RandomTensor({2, 4}, rng);
  EXPECT_TRUE(MatMul(ctx, a, b_transposed, &c, {.transpose_b = true}).ok());
  Tensor vec = RandomTensor({4}, rng);
  EXPECT_EQ(MatMul(ctx, a, vec, &c).code(), StatusCode::kInvalidArgument);
  Tensor b2 = RandomTensor({4, 2}, rng);
  Tensor wrong = Tensor::Zeros({2, 2});
  EXPECT_EQ(MatMul(ctx, a, b2, &wrong, {.beta = 1.0f}).code(),
            StatusCode::kInvalidArgument);
  Tensor square = RandomTensor({3, 3}, rng);
  EXPECT_EQ(MatMul(ctx, square, square, &square).code(),
            StatusCode::kInvalidArgument);
}

TEST(BiasAdd, AddsTheBiasToEveryRow) {
  Context ctx = Context::Cpu(1);
  std::mt19937 rng(7);
  Tensor x = RandomTensor({4, 70}, rng);
  Tensor bias = RandomTensor({70}, rng);
  std::vector<double> expected = AsDoubles(x);
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 70; ++j) expected[i * 70 + j] += bias[j];
  }
  ASSERT_TRUE(BiasAdd(ctx, bias, &x).ok());
  ExpectClose(x, expected, 1e-6, 1e-6);
  Tensor short_bias = RandomTensor({69}, rng);
  EXPECT_EQ(BiasAdd(ctx, short_bias, &x).code(), StatusCode::kInvalidArgument);
}

TEST(BiasAddGrad, SumsColumnsTheSameWayOnAnyThreadCount) {
  std::mt19937 rng(8);
  for (int64_t rows : {3, 20000}) {
    Tensor dy = RandomTensor({rows, 150}, rng);
    std::vector<double> expected(150, 0.0);
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < 150; ++j) expected[j] += dy[i * 150 + j];
    }
    Tensor d1, d4;
    ASSERT_TRUE(BiasAddGrad(Context::Cpu(1), dy, &d1).ok());
    ASSERT_TRUE(BiasAddGrad(Context::Cpu(4), dy, &d4).ok());
    ASSERT_EQ(d1.shape(), std::vector<int64_t>{150});
    ExpectClose(d1, expected, 1e-5, 1e-5 * static_cast<double>(rows));
    for (int64_t j = 0; j < 150; ++j) EXPECT_EQ(d1[j], d4[j]) << j;
  }
}

// y = x W + b; L = sum(R . y). Checks dL/dW, dL/dx and dL/db computed with
// MatMul and BiasAddGrad against central differences of L in double.
TEST(DenseLayer, GradientsMatchFiniteDifferences) {
  Context ctx = Context::Cpu(1);
  std::mt19937 rng(9);
  const int64_t batch = 4, in = 5, out = 3;
  Tensor x = RandomTensor({batch, in}, rng);
  Tensor w = RandomTensor({in, out}, rng);
  Tensor b = RandomTensor({out}, rng);
  Tensor r = RandomTensor({batch, out}, rng);

  auto loss = [&](const std::vector<double>& xv, const std::vector<double>& wv,
                  const std::vector<double>& bv) {
    double total = 0.0;
    for (int64_t i = 0; i < batch; ++i) {
      for (int64_t j = 0; j < out; ++j) {
        double y = bv[j];
        for (int64_t p = 0; p < in; ++p) y += xv[i * in + p] * wv[p * out + j];
        total += r[i * out + j] * y;
      }
    }
    return total;
  };
  const std::vector<double> xd = AsDoubles(x), wd = AsDoubles(w),
                            bd = AsDoubles(b);

  Tensor dw, dx, db;
  ASSERT_TRUE(MatMul(ctx, x, r, &dw, {.transpose_a = true}).ok());
  ASSERT_TRUE(MatMul(ctx, r, w, &dx, {.transpose_b = true}).ok());
  ASSERT_TRUE(BiasAddGrad(ctx, r, &db).ok());
  ExpectClose(
      dw, NumericGradient([&](const auto& v) { return loss(xd, v, bd); }, wd),
      testing::kGradRtol, testing::kGradAtol, "dW");
  ExpectClose(
      dx, NumericGradient([&](const auto& v) { return loss(v, wd, bd); }, xd),
      testing::kGradRtol, testing::kGradAtol, "dx");
  ExpectClose(
      db, NumericGradient([&](const auto& v) { return loss(xd, wd, v); }, bd),
      testing::kGradRtol, testing::kGradAtol, "db");
}

// A two-layer network, x -> tanh(x W1 + b1) -> h W2 + b2 -> sigmoid
// cross-entropy, back-propagated with the kernels and checked against
// central differences of the same network in double.
TEST(DenseLayer, TwoLayerNetworkGradientsMatchFiniteDifferences) {
  Context ctx = Context::Cpu(1);
  std::mt19937 rng(10);
  const int64_t batch = 6, in = 4, hidden = 5;
  Tensor x = RandomTensor({batch, in}, rng);
  Tensor w1 = RandomTensor({in, hidden}, rng);
  Tensor b1 = RandomTensor({hidden}, rng);
  Tensor w2 = RandomTensor({hidden, 1}, rng);
  Tensor b2 = RandomTensor({1}, rng);
  Tensor labels = Tensor::FromValues({batch, 1}, {1, 0, 0, 1, 1, 0});

  Tensor h, logits;
  ASSERT_TRUE(MatMul(ctx, x, w1, &h).ok());
  ASSERT_TRUE(BiasAdd(ctx, b1, &h).ok());
  ASSERT_TRUE(Tanh(ctx, h, &h).ok());
  ASSERT_TRUE(MatMul(ctx, h, w2, &logits).ok());
  ASSERT_TRUE(BiasAdd(ctx, b2, &logits).ok());
  Tensor dlogits, dw2, db2, dh, dw1, db1;
  ASSERT_TRUE(SigmoidCrossEntropy(ctx, logits, labels, &dlogits).ok());
  ASSERT_TRUE(MatMul(ctx, h, dlogits, &dw2, {.transpose_a = true}).ok());
  ASSERT_TRUE(BiasAddGrad(ctx, dlogits, &db2).ok());
  ASSERT_TRUE(MatMul(ctx, dlogits, w2, &dh, {.transpose_b = true}).ok());
  ASSERT_TRUE(TanhGrad(ctx, h, dh, &dh).ok());
  ASSERT_TRUE(MatMul(ctx, x, dh, &dw1, {.transpose_a = true}).ok());
  ASSERT_TRUE(BiasAddGrad(ctx, dh, &db1).ok());

  // Parameters packed as [w1, b1, w2, b2].
  std::vector<double> params;
  for (const Tensor* t : {&w1, &b1, &w2, &b2}) {
    params.insert(params.end(), t->data(), t->data() + t->size());
  }
  auto loss = [&](const std::vector<double>& p) {
    const double* pw1 = p.data();
    const double* pb1 = pw1 + in * hidden;
    const double* pw2 = pb1 + hidden;
    const double pb2 = pw2[hidden];
    double total = 0.0;
    for (int64_t i = 0; i < batch; ++i) {
      double logit = pb2;
      for (int64_t j = 0; j < hidden; ++j) {
        double a = pb1[j];
        for (int64_t k = 0; k < in; ++k)
          a += x[i * in + k] * pw1[k * hidden + j];
        logit += std::tanh(a) * pw2[j];
      }
      const double z = labels[i];
      total += std::max(logit, 0.0) - logit * z +
               std::log1p(std::exp(-std::fabs(logit)));
    }
    return total / static_cast<double>(batch);
  };
  const std::vector<double> numeric = NumericGradient(loss, params);
  std::vector<float> analytic;
  for (const Tensor* t : {&dw1, &db1, &dw2, &db2}) {
    analytic.insert(analytic.end(), t->data(), t->data() + t->size());
  }
  ExpectClose(analytic, numeric, testing::kGradRtol, testing::kGradAtol,
              "network gradient");
}

}  // namespace
}  // namespace dtf::kernels
