#include "lib/kernels/batch_norm.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/kernels/test_util.h"

namespace dtf::kernels {
namespace {

using testing::AsDoubles;
using testing::ExpectClose;
using ::testing::HasSubstr;
using testing::NumericGradient;
using testing::RandomTensor;

// The batch statistics and output of BatchNormTrain in double.
struct Reference {
  std::vector<double> mean, var, xhat, y;
};

Reference ReferenceTrain(const std::vector<double>& x,
                         const std::vector<double>& gamma,
                         const std::vector<double>& beta, int64_t n, int64_t d,
                         double eps) {
  Reference r;
  r.mean.assign(static_cast<size_t>(d), 0.0);
  r.var.assign(static_cast<size_t>(d), 0.0);
  r.xhat.resize(x.size());
  r.y.resize(x.size());
  for (int64_t j = 0; j < d; ++j) {
    for (int64_t i = 0; i < n; ++i) r.mean[j] += x[i * d + j];
    r.mean[j] /= static_cast<double>(n);
    for (int64_t i = 0; i < n; ++i) {
      r.var[j] += (x[i * d + j] - r.mean[j]) * (x[i * d + j] - r.mean[j]);
    }
    r.var[j] /= static_cast<double>(n);
    for (int64_t i = 0; i < n; ++i) {
      const size_t k = static_cast<size_t>(i * d + j);
      r.xhat[k] = (x[k] - r.mean[j]) / std::sqrt(r.var[j] + eps);
      r.y[k] = gamma[j] * r.xhat[k] + beta[j];
    }
  }
  return r;
}

Tensor RandomPositive(int64_t d, std::mt19937& rng) {
  return RandomTensor({d}, rng, 0.5f, 2.0f);
}

TEST(BatchNorm, DefaultsAreKeras) {
  BatchNormOptions options;
  EXPECT_EQ(options.epsilon, 1e-3f);
  EXPECT_EQ(options.momentum, 0.99f);
}

// Column 0 is {1, 3}: mean 2, variance 1. Column 1 is {2, 6}: mean 4,
// variance 4. With epsilon 0 both normalize to {-1, 1}.
TEST(BatchNorm, TrainMatchesHandComputation) {
  Context ctx = Context::Cpu(1);
  Tensor x = Tensor::FromValues({2, 2}, {1.0f, 2.0f, 3.0f, 6.0f});
  Tensor gamma = Tensor::FromValues({2}, {2.0f, 0.5f});
  Tensor beta = Tensor::FromValues({2}, {0.25f, -1.0f});
  Tensor moving_mean = Tensor::FromValues({2}, {0.5f, -1.0f});
  Tensor moving_variance = Tensor::FromValues({2}, {2.0f, 1.0f});
  Tensor y;
  BatchNormCache cache;
  ASSERT_TRUE(BatchNormTrain(ctx, x, gamma, beta, &moving_mean,
                             &moving_variance, {0.0f, 0.75f}, &y, &cache)
                  .ok());
  ASSERT_EQ(y.shape(), x.shape());
  ExpectClose(y, std::vector<double>{-1.75, -1.5, 2.25, -0.5}, 1e-6, 1e-6, "y");
  ExpectClose(cache.xhat, std::vector<double>{-1, -1, 1, 1}, 1e-6, 1e-6,
              "xhat");
  ExpectClose(cache.inv_std, std::vector<double>{1.0, 0.5}, 1e-6, 0, "inv");
  // 0.75 * old + 0.25 * batch statistic.
  ExpectClose(moving_mean, std::vector<double>{0.875, 0.25}, 1e-6, 0, "mean");
  ExpectClose(moving_variance, std::vector<double>{1.75, 1.75}, 1e-6, 0,
              "variance");
}

TEST(BatchNorm, TrainMatchesReferenceAndUpdatesMovingStatistics) {
  std::mt19937 rng(1);
  for (int threads : {1, 4}) {
    Context ctx = Context::Cpu(threads);
    // 70 columns: two full blocks of columns and a partial one.
    const int64_t n = 9, d = 70;
    Tensor x = RandomTensor({n, d}, rng, -2.0f, 3.0f);
    Tensor gamma = RandomTensor({d}, rng);
    Tensor beta = RandomTensor({d}, rng);
    Tensor moving_mean = RandomTensor({d}, rng);
    Tensor moving_variance = RandomPositive(d, rng);
    const std::vector<double> old_mean = AsDoubles(moving_mean);
    const std::vector<double> old_var = AsDoubles(moving_variance);
    const BatchNormOptions options;
    Tensor y;
    BatchNormCache cache;
    ASSERT_TRUE(BatchNormTrain(ctx, x, gamma, beta, &moving_mean,
                               &moving_variance, options, &y, &cache)
                    .ok());
    const Reference r = ReferenceTrain(AsDoubles(x), AsDoubles(gamma),
                                       AsDoubles(beta), n, d, options.epsilon);
    ExpectClose(y, r.y, 1e-5, 1e-5, "y");
    ExpectClose(cache.xhat, r.xhat, 1e-5, 1e-5, "xhat");
    std::vector<double> inv(static_cast<size_t>(d));
    std::vector<double> mean(static_cast<size_t>(d));
    std::vector<double> var(static_cast<size_t>(d));
    for (size_t j = 0; j < inv.size(); ++j) {
      inv[j] = 1.0 / std::sqrt(r.var[j] + options.epsilon);
      mean[j] = 0.99 * old_mean[j] + 0.01 * r.mean[j];
      var[j] = 0.99 * old_var[j] + 0.01 * r.var[j];
    }
    ExpectClose(cache.inv_std, inv, 1e-5, 0, "inv_std");
    ExpectClose(moving_mean, mean, 1e-5, 1e-6, "moving_mean");
    ExpectClose(moving_variance, var, 1e-5, 1e-6, "moving_variance");
  }
}

TEST(BatchNorm, MovingStatisticsConvergeToTheBatchStatistics) {
  Context ctx = Context::Cpu(1);
  std::mt19937 rng(2);
  const int64_t n = 16, d = 3;
  Tensor x = RandomTensor({n, d}, rng, -1.0f, 4.0f);
  Tensor gamma = RandomTensor({d}, rng);
  Tensor beta = RandomTensor({d}, rng);
  Tensor moving_mean = RandomTensor({d}, rng);
  Tensor moving_variance = RandomPositive(d, rng);
  Tensor y;
  BatchNormCache cache;
  for (int step = 0; step < 200; ++step) {
    ASSERT_TRUE(BatchNormTrain(ctx, x, gamma, beta, &moving_mean,
                               &moving_variance, {1e-3f, 0.9f}, &y, &cache)
                    .ok());
  }
  const Reference r = ReferenceTrain(AsDoubles(x), AsDoubles(gamma),
                                     AsDoubles(beta), n, d, 1e-3);
  ExpectClose(moving_mean, r.mean, 1e-4, 1e-5, "moving_mean");
  ExpectClose(moving_variance, r.var, 1e-4, 1e-5, "moving_variance");
}

TEST(BatchNorm, InferUsesMovingStatistics) {
  Context ctx = Context::Cpu(1);
  std::mt19937 rng(3);
  const int64_t n = 5, d = 37;
  Tensor x = RandomTensor({n, d}, rng, -3.0f, 3.0f);
  Tensor gamma = RandomTensor({d}, rng);
  Tensor beta = RandomTensor({d}, rng);
  Tensor moving_mean = RandomTensor({d}, rng);
  Tensor moving_variance = RandomPositive(d, rng);
  const BatchNormOptions options{0.01f, 0.5f};
  Tensor y;
  ASSERT_TRUE(BatchNormInfer(ctx, x, gamma, beta, moving_mean, moving_variance,
                             options, &y)
                  .ok());
  ASSERT_EQ(y.shape(), x.shape());
  std::vector<double> expected(static_cast<size_t>(x.size()));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < d; ++j) {
      expected[i * d + j] =
          gamma[j] * (x[i * d + j] - moving_mean[j]) /
              std::sqrt(static_cast<double>(moving_variance[j]) + 0.01) +
          beta[j];
    }
  }
  ExpectClose(y, expected, 1e-5, 1e-5, "y");
  // Inference never changes the moving statistics; in place gives the same.
  Tensor copy = x.Clone();
  ASSERT_TRUE(BatchNormInfer(ctx, copy, gamma, beta, moving_mean,
                             moving_variance, options, &copy)
                  .ok());
  for (int64_t i = 0; i < x.size(); ++i) EXPECT_EQ(copy[i], y[i]);
}

TEST(BatchNorm, InferWithTheBatchStatisticsMatchesTrain) {
  Context ctx = Context::Cpu(1);
  std::mt19937 rng(4);
  const int64_t n = 12, d = 6;
  Tensor x = RandomTensor({n, d}, rng, -2.0f, 2.0f);
  Tensor gamma = RandomTensor({d}, rng);
  Tensor beta = RandomTensor({d}, rng);
  // Momentum 0: the moving statistics become the batch statistics.
  Tensor moving_mean = RandomTensor({d}, rng);
  Tensor moving_variance = RandomPositive(d, rng);
  const BatchNormOptions options{1e-3f, 0.0f};
  Tensor y_train, y_infer;
  BatchNormCache cache;
  ASSERT_TRUE(BatchNormTrain(ctx, x, gamma, beta, &moving_mean,
                             &moving_variance, options, &y_train, &cache)
                  .ok());
  ASSERT_TRUE(BatchNormInfer(ctx, x, gamma, beta, moving_mean, moving_variance,
                             options, &y_infer)
                  .ok());
  testing::ExpectTensorsNear(y_infer, y_train, 1e-5, "infer vs train");
}

// L = sum(w . BatchNormTrain(x, gamma, beta)); the gradient kernel, given
// dy = w, against central differences of L in double.
TEST(BatchNorm, GradientsMatchFiniteDifferences) {
  Context ctx = Context::Cpu(1);
  std::mt19937 rng(5);
  const int64_t n = 7, d = 5;
  const double eps = 1e-3;
  Tensor x = RandomTensor({n, d}, rng, -2.0f, 2.0f);
  Tensor gamma = RandomTensor({d}, rng, 0.5f, 2.0f);
  Tensor beta = RandomTensor({d}, rng);
  Tensor w = RandomTensor({n, d}, rng);
  Tensor moving_mean = Tensor::Zeros({d});
  Tensor moving_variance = Tensor::Filled({d}, 1.0f);
  Tensor y, dx, dgamma, dbeta;
  BatchNormCache cache;
  ASSERT_TRUE(BatchNormTrain(ctx, x, gamma, beta, &moving_mean,
                             &moving_variance, {}, &y, &cache)
                  .ok());
  ASSERT_TRUE(BatchNormGrad(ctx, w, gamma, cache, &dx, &dgamma, &dbeta).ok());
  ASSERT_EQ(dx.shape(), x.shape());
  ASSERT_EQ(dgamma.shape(), std::vector<int64_t>{d});
  ASSERT_EQ(dbeta.shape(), std::vector<int64_t>{d});

  const std::vector<double> xs = AsDoubles(x);
  const std::vector<double> gs = AsDoubles(gamma);
  const std::vector<double> bs = AsDoubles(beta);
  auto loss = [&](const std::vector<double>& xv, const std::vector<double>& gv,
                  const std::vector<double>& bv) {
    const Reference r = ReferenceTrain(xv, gv, bv, n, d, eps);
    double total = 0.0;
    for (size_t k = 0; k < r.y.size(); ++k) total += w[k] * r.y[k];
    return total;
  };
  ExpectClose(
      dx,
      NumericGradient(
          [&](const std::vector<double>& v) { return loss(v, gs, bs); }, xs),
      testing::kGradRtol, testing::kGradAtol, "dx");
  ExpectClose(
      dgamma,
      NumericGradient(
          [&](const std::vector<double>& v) { return loss(xs, v, bs); }, gs),
      testing::kGradRtol, testing::kGradAtol, "dgamma");
  ExpectClose(
      dbeta,
      NumericGradient(
          [&](const std::vector<double>& v) { return loss(xs, gs, v); }, bs),
      testing::kGradRtol, testing::kGradAtol, "dbeta");

  // In place: dx may be dy.
  Tensor dy = w.Clone();
  ASSERT_TRUE(BatchNormGrad(ctx, dy, gamma, cache, &dy, &dgamma, &dbeta).ok());
  for (int64_t i = 0; i < dx.size(); ++i) EXPECT_EQ(dy[i], dx[i]);
}

TEST(BatchNorm, TrainInPlaceMatchesOutOfPlace) {
  Context ctx = Context::Cpu(1);
  std::mt19937 rng(6);
  Tensor x = RandomTensor({8, 3}, rng);
  Tensor gamma = RandomTensor({3}, rng);
  Tensor beta = RandomTensor({3}, rng);
  Tensor mean1 = RandomTensor({3}, rng);
  Tensor var1 = RandomPositive(3, rng);
  Tensor mean2 = mean1.Clone();
  Tensor var2 = var1.Clone();
  Tensor y;
  BatchNormCache cache1, cache2;
  ASSERT_TRUE(
      BatchNormTrain(ctx, x, gamma, beta, &mean1, &var1, {}, &y, &cache1).ok());
  ASSERT_TRUE(
      BatchNormTrain(ctx, x, gamma, beta, &mean2, &var2, {}, &x, &cache2).ok());
  for (int64_t i = 0; i < y.size(); ++i) {
    EXPECT_EQ(x[i], y[i]);
    EXPECT_EQ(cache1.xhat[i], cache2.xhat[i]);
  }
  for (int64_t j = 0; j < 3; ++j) {
    EXPECT_EQ(mean1[j], mean2[j]);
    EXPECT_EQ(var1[j], var2[j]);
  }
}

TEST(BatchNorm, OneAndFourThreadsGiveIdenticalResults) {
  std::mt19937 rng(7);
  const int64_t n = 4096, d = 300;
  Tensor x = RandomTensor({n, d}, rng, -3.0f, 5.0f);
  Tensor dy = RandomTensor({n, d}, rng);
  Tensor gamma = RandomTensor({d}, rng);
  Tensor beta = RandomTensor({d}, rng);
  Tensor mm = RandomTensor({d}, rng);
  Tensor mv = RandomPositive(d, rng);
  Tensor y[2], dx[2], dg[2], db[2], mean[2], var[2], yi[2];
  BatchNormCache cache[2];
  int k = 0;
  for (int threads : {1, 4}) {
    Context ctx = Context::Cpu(threads);
    mean[k] = mm.Clone();
    var[k] = mv.Clone();
    ASSERT_TRUE(BatchNormTrain(ctx, x, gamma, beta, &mean[k], &var[k], {},
                               &y[k], &cache[k])
                    .ok());
    ASSERT_TRUE(
        BatchNormGrad(ctx, dy, gamma, cache[k], &dx[k], &dg[k], &db[k]).ok());
    ASSERT_TRUE(BatchNormInfer(ctx, x, gamma, beta, mm, mv, {}, &yi[k]).ok());
    ++k;
  }
  for (int64_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(y[0][i], y[1][i]) << i;
    ASSERT_EQ(dx[0][i], dx[1][i]) << i;
    ASSERT_EQ(yi[0][i], yi[1][i]) << i;
  }
  for (int64_t j = 0; j < d; ++j) {
    ASSERT_EQ(dg[0][j], dg[1][j]) << j;
    ASSERT_EQ(db[0][j], db[1][j]) << j;
    ASSERT_EQ(mean[0][j], mean[1][j]) << j;
    ASSERT_EQ(var[0][j], var[1][j]) << j;
  }
}

TEST(BatchNorm, RejectsBadShapes) {
  Context ctx = Context::Cpu(1);
  std::mt19937 rng(8);
  Tensor x = RandomTensor({4, 3}, rng);
  Tensor gamma = RandomTensor({3}, rng);
  Tensor beta = RandomTensor({3}, rng);
  Tensor mean = RandomTensor({3}, rng);
  Tensor var = RandomPositive(3, rng);
  Tensor wrong = RandomTensor({4}, rng);
  Tensor matrix = RandomTensor({1, 3}, rng);
  Tensor vec = RandomTensor({12}, rng);
  Tensor empty = Tensor::Zeros({0, 3});
  Tensor y;
  BatchNormCache cache;
  const std::vector<double> old_mean = AsDoubles(mean);

  Status s = BatchNormTrain(ctx, x, wrong, beta, &mean, &var, {}, &y, &cache);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("BatchNormTrain: gamma [4] does not fit x [4, 3]"));
  EXPECT_EQ(
      BatchNormTrain(ctx, x, gamma, matrix, &mean, &var, {}, &y, &cache).code(),
      StatusCode::kInvalidArgument);
  EXPECT_EQ(
      BatchNormTrain(ctx, x, gamma, beta, &mean, &wrong, {}, &y, &cache).code(),
      StatusCode::kInvalidArgument);
  EXPECT_EQ(
      BatchNormTrain(ctx, vec, gamma, beta, &mean, &var, {}, &y, &cache).code(),
      StatusCode::kInvalidArgument);
  EXPECT_EQ(BatchNormTrain(ctx, empty, gamma, beta, &mean, &var, {}, &y, &cache)
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(
      BatchNormTrain(ctx, x, gamma, beta, &mean, &mean, {}, &y, &cache).code(),
      StatusCode::kInvalidArgument);
  // A rejected call leaves the moving statistics alone.
  for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(mean[j], old_mean[j]);

  s = BatchNormInfer(ctx, x, gamma, beta, wrong, var, {}, &y);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("BatchNormInfer"));
  EXPECT_EQ(BatchNormInfer(ctx, vec, gamma, beta, mean, var, {}, &y).code(),
            StatusCode::kInvalidArgument);

  ASSERT_TRUE(
      BatchNormTrain(ctx, x, gamma, beta, &mean, &var, {}, &y, &cache).ok());
  Tensor dx, dgamma, dbeta;
  Tensor dy_wrong = RandomTensor({3, 4}, rng);
  s = BatchNormGrad(ctx, dy_wrong, gamma, cache, &dx, &dgamma, &dbeta);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("BatchNormGrad: dy [3, 4]"));
  Tensor dy = RandomTensor({4, 3}, rng);
  EXPECT_EQ(BatchNormGrad(ctx, dy, wrong, cache, &dx, &dgamma, &dbeta).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(BatchNormGrad(ctx, dy, gamma, cache, &dx, &dgamma, &dgamma).code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(BatchNormGrad(ctx, dy, gamma, cache, &dx, &dgamma, &dbeta).ok());
}

}  // namespace
}  // namespace dtf::kernels
