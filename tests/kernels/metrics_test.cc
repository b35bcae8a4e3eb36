#include "lib/kernels/metrics.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace dtf::kernels {
namespace {

TEST(BinaryAccuracy, ThresholdsProbabilitiesAtOneHalf) {
  Context ctx = Context::Cpu(1);
  BinaryAccuracy acc;
  EXPECT_TRUE(std::isnan(acc.Result()));
  // 0.5 itself predicts 0.
  ASSERT_TRUE(acc.Update(ctx, Tensor::FromValues({4}, {0.9f, 0.5f, 0.2f, 0.6f}),
                         Tensor::FromValues({4}, {1, 1, 0, 0}))
                  .ok());
  ASSERT_TRUE(acc.Update(ctx, Tensor::FromValues({1}, {0.7f}),
                         Tensor::FromValues({1}, {1}))
                  .ok());
  EXPECT_DOUBLE_EQ(acc.Result(), 3.0 / 5.0);
  EXPECT_EQ(acc.count(), 5);
  EXPECT_EQ(acc.Update(ctx, Tensor::Zeros({2}), Tensor::Zeros({3})).code(),
            StatusCode::kInvalidArgument);
  acc.Reset();
  EXPECT_EQ(acc.count(), 0);
}

TEST(RocAuc, HandComputedWithoutTies) {
  Context ctx = Context::Cpu(1);
  RocAuc auc;
  // Positives 0.8, 0.4; negatives 0.6, 0.2: of 4 pairs, 3 are ordered.
  ASSERT_TRUE(auc.Update(ctx, Tensor::FromValues({4}, {0.8f, 0.6f, 0.4f, 0.2f}),
                         Tensor::FromValues({4}, {1, 0, 1, 0}))
                  .ok());
  EXPECT_DOUBLE_EQ(auc.Result(), 0.75);
}

TEST(RocAuc, TiesCountOneHalf) {
  Context ctx = Context::Cpu(1);
  RocAuc auc;
  // Scores 0.5 (pos), 0.5 (neg), 0.5 (pos), 0.9 (pos), 0.1 (neg), 0.9 (neg).
  // Pairs (pos, neg), 3 x 3 = 9: 0.5p vs 0.5n: 1/2 each (2 pairs -> 1);
  // 0.5p vs 0.1n: 1 each (2); 0.5p vs 0.9n: 0; 0.9p vs 0.5n: 1; 0.9p vs
  // 0.1n: 1; 0.9p vs 0.9n: 1/2. Total 5.5 / 9.
  ASSERT_TRUE(auc.Update(ctx, Tensor::FromValues({3}, {0.5f, 0.5f, 0.5f}),
                         Tensor::FromValues({3}, {1, 0, 1}))
                  .ok());
  ASSERT_TRUE(auc.Update(ctx, Tensor::FromValues({3}, {0.9f, 0.1f, 0.9f}),
                         Tensor::FromValues({3}, {1, 0, 0}))
                  .ok());
  EXPECT_DOUBLE_EQ(auc.Result(), 5.5 / 9.0);
  EXPECT_EQ(auc.count(), 6);
}

TEST(RocAuc, AllTiedIsOneHalfAndOneClassIsUndefined) {
  Context ctx = Context::Cpu(1);
  RocAuc auc;
  ASSERT_TRUE(auc.Update(ctx, Tensor::Filled({4}, 0.3f),
                         Tensor::FromValues({4}, {1, 0, 0, 1}))
                  .ok());
  EXPECT_DOUBLE_EQ(auc.Result(), 0.5);
  RocAuc one_class;
  ASSERT_TRUE(one_class
                  .Update(ctx, Tensor::FromValues({2}, {0.1f, 0.2f}),
                          Tensor::FromValues({2}, {1, 1}))
                  .ok());
  EXPECT_TRUE(std::isnan(one_class.Result()));
  EXPECT_EQ(one_class
                .Update(ctx,
                        Tensor::FromValues(
                            {1}, {std::numeric_limits<float>::quiet_NaN()}),
                        Tensor::FromValues({1}, {0}))
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(one_class.count(), 2);
}

TEST(RocAuc, MergeEqualsOneStream) {
  Context ctx = Context::Cpu(1);
  RocAuc a, b, all;
  Tensor s1 = Tensor::FromValues({3}, {0.1f, 0.7f, 0.4f});
  Tensor l1 = Tensor::FromValues({3}, {0, 1, 1});
  Tensor s2 = Tensor::FromValues({2}, {0.35f, 0.8f});
  Tensor l2 = Tensor::FromValues({2}, {0, 0});
  ASSERT_TRUE(a.Update(ctx, s1, l1).ok());
  ASSERT_TRUE(b.Update(ctx, s2, l2).ok());
  ASSERT_TRUE(all.Update(ctx, s1, l1).ok());
  ASSERT_TRUE(all.Update(ctx, s2, l2).ok());
  a.Merge(b);
  EXPECT_DOUBLE_EQ(a.Result(), all.Result());
  // Positives 0.7, 0.4 against negatives 0.1, 0.35, 0.8: 4 of 6 ordered.
  EXPECT_DOUBLE_EQ(all.Result(), 4.0 / 6.0);
}

TEST(BinaryPrecisionRecall, HandComputedAtOneHalf) {
  Context ctx = Context::Cpu(1);
  BinaryPrecisionRecall pr;
  EXPECT_TRUE(std::isnan(pr.Precision()));
  EXPECT_TRUE(std::isnan(pr.Recall()));
  // Predicted 1: 0.9 (right), 0.6 and 0.7 (wrong); 0.5 predicts 0, so the
  // positive at 0.5 is missed. TP 1, FP 2, FN 1.
  ASSERT_TRUE(pr.Update(ctx,
                        Tensor::FromValues({5}, {0.9f, 0.6f, 0.5f, 0.7f, 0.1f}),
                        Tensor::FromValues({5}, {1, 0, 1, 0, 0}))
                  .ok());
  EXPECT_DOUBLE_EQ(pr.Precision(), 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(pr.Recall(), 1.0 / 2.0);
  EXPECT_DOUBLE_EQ(pr.PositiveRate(), 2.0 / 5.0);
  EXPECT_EQ(pr.count(), 5);
  BinaryPrecisionRecall more;
  ASSERT_TRUE(more.Update(ctx, Tensor::FromValues({2}, {0.8f, 0.2f}),
                          Tensor::FromValues({2}, {1, 1}))
                  .ok());
  pr.Merge(more);  // TP 2, FP 2, FN 2
  EXPECT_DOUBLE_EQ(pr.Precision(), 2.0 / 4.0);
  EXPECT_DOUBLE_EQ(pr.Recall(), 2.0 / 4.0);
  EXPECT_DOUBLE_EQ(pr.PositiveRate(), 4.0 / 7.0);
  EXPECT_EQ(pr.Update(ctx, Tensor::Zeros({2}), Tensor::Zeros({3})).code(),
            StatusCode::kInvalidArgument);
}

TEST(BinaryPrecisionRecall, NoPredictedPositivesIsZeroNotNaN) {
  Context ctx = Context::Cpu(1);
  BinaryPrecisionRecall pr;
  // A model that predicts the majority class everywhere.
  ASSERT_TRUE(pr.Update(ctx, Tensor::FromValues({4}, {0.1f, 0.2f, 0.3f, 0.4f}),
                        Tensor::FromValues({4}, {0, 0, 0, 1}))
                  .ok());
  EXPECT_EQ(pr.Precision(), 0.0);
  EXPECT_EQ(pr.Recall(), 0.0);
  EXPECT_DOUBLE_EQ(pr.PositiveRate(), 0.25);
}

TEST(AveragePrecision, HandComputedAsSklearn) {
  Context ctx = Context::Cpu(1);
  AveragePrecision ap;
  EXPECT_TRUE(std::isnan(ap.Result()));
  // sklearn's average_precision_score example: scores 0.8 (+), 0.4 (-),
  // 0.35 (+), 0.1 (-): R 1/2 at P 1, then R 1 at P 2/3:
  // 1/2 * 1 + 1/2 * 2/3 = 5/6.
  ASSERT_TRUE(ap.Update(ctx, Tensor::FromValues({4}, {0.1f, 0.4f, 0.35f, 0.8f}),
                        Tensor::FromValues({4}, {0, 0, 1, 1}))
                  .ok());
  EXPECT_DOUBLE_EQ(ap.Result(), 5.0 / 6.0);
  EXPECT_EQ(ap.count(), 4);
}

TEST(AveragePrecision, TiedScoresEnterTogether) {
  Context ctx = Context::Cpu(1);
  AveragePrecision ap;
  // 0.9 (+): R 1/3, P 1. The three at 0.5 (+, -, +) together: R 1, P 3/4.
  // 0.2 (-): R unchanged. AP = 1/3 + 2/3 * 3/4 = 5/6.
  ASSERT_TRUE(ap.Update(ctx,
                        Tensor::FromValues({5}, {0.5f, 0.9f, 0.5f, 0.2f, 0.5f}),
                        Tensor::FromValues({5}, {1, 1, 0, 0, 1}))
                  .ok());
  EXPECT_DOUBLE_EQ(ap.Result(), 5.0 / 6.0);
  // Every score tied: the positive rate.
  AveragePrecision flat;
  ASSERT_TRUE(flat.Update(ctx,
                          Tensor::FromValues({4}, {0.3f, 0.3f, 0.3f, 0.3f}),
                          Tensor::FromValues({4}, {0, 1, 0, 0}))
                  .ok());
  EXPECT_DOUBLE_EQ(flat.Result(), 0.25);
}

TEST(AveragePrecision, MergeEqualsOneStreamAndNoPositiveIsUndefined) {
  Context ctx = Context::Cpu(1);
  const Tensor scores =
      Tensor::FromValues({6}, {0.7f, 0.1f, 0.4f, 0.9f, 0.3f, 0.6f});
  const Tensor labels = Tensor::FromValues({6}, {1, 0, 0, 1, 1, 0});
  AveragePrecision one, a, b;
  ASSERT_TRUE(one.Update(ctx, scores, labels).ok());
  ASSERT_TRUE(a.Update(ctx, Tensor::FromValues({3}, {0.7f, 0.1f, 0.4f}),
                       Tensor::FromValues({3}, {1, 0, 0}))
                  .ok());
  ASSERT_TRUE(b.Update(ctx, Tensor::FromValues({3}, {0.9f, 0.3f, 0.6f}),
                       Tensor::FromValues({3}, {1, 1, 0}))
                  .ok());
  a.Merge(b);
  // 0.9+ 0.7+ (R 2/3, P 1), 0.6- 0.4-, 0.3+ (R 1, P 3/5): 2/3 + 1/3 * 3/5.
  EXPECT_DOUBLE_EQ(one.Result(), 2.0 / 3.0 + 1.0 / 5.0);
  EXPECT_DOUBLE_EQ(a.Result(), one.Result());
  AveragePrecision none;
  ASSERT_TRUE(none.Update(ctx, Tensor::FromValues({2}, {0.2f, 0.8f}),
                          Tensor::FromValues({2}, {0, 0}))
                  .ok());
  EXPECT_TRUE(std::isnan(none.Result()));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(none.Update(ctx, Tensor::FromValues({1}, {nan}),
                        Tensor::FromValues({1}, {1}))
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(none.count(), 2);
}

TEST(LogLoss, HandComputedWithClipping) {
  Context ctx = Context::Cpu(1);
  LogLoss loss;
  ASSERT_TRUE(loss.Update(ctx, Tensor::FromValues({3}, {0.8f, 0.0f, 1.0f}),
                          Tensor::FromValues({3}, {1, 1, 1}))
                  .ok());
  // -log(0.8), then p = 0 clipped to 1e-7, then p = 1 clipped to 1 - 1e-7.
  const double expected = (-std::log(static_cast<double>(0.8f)) -
                           std::log(1e-7) - std::log(1.0 - 1e-7)) /
                          3.0;
  EXPECT_NEAR(loss.Result(), expected, 1e-9);
  LogLoss soft;
  ASSERT_TRUE(soft.Update(ctx, Tensor::FromValues({1}, {0.25f}),
                          Tensor::FromValues({1}, {0.5f}))
                  .ok());
  EXPECT_NEAR(soft.Result(), -0.5 * std::log(0.25) - 0.5 * std::log(0.75),
              1e-9);
}

TEST(MulticlassAccuracy, ArgmaxWithTiesToTheLowestClass) {
  Context ctx = Context::Cpu(1);
  MulticlassAccuracy acc;
  Tensor scores = Tensor::FromValues({3, 3}, {0.1f, 0.7f, 0.2f,  //
                                              0.5f, 0.5f, 0.0f,  //
                                              2.0f, 1.0f, 3.0f});
  ASSERT_TRUE(acc.Update(ctx, scores, IdTensor::FromValues({1, 1, 2})).ok());
  EXPECT_DOUBLE_EQ(acc.Result(), 2.0 / 3.0);
  EXPECT_EQ(acc.Update(ctx, scores, IdTensor::FromValues({0, 3, 1})).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(acc.count(), 3);
}

TEST(SquaredError, MeanAndRoot) {
  Context ctx = Context::Cpu(1);
  SquaredError err;
  ASSERT_TRUE(err.Update(ctx, Tensor::FromValues({2}, {1, 2}),
                         Tensor::FromValues({2}, {2, 4}))
                  .ok());
  ASSERT_TRUE(err.Update(ctx, Tensor::FromValues({1}, {3}),
                         Tensor::FromValues({1}, {0}))
                  .ok());
  EXPECT_DOUBLE_EQ(err.MeanSquaredError(), (1.0 + 4.0 + 9.0) / 3.0);
  EXPECT_DOUBLE_EQ(err.RootMeanSquaredError(), std::sqrt(14.0 / 3.0));
  SquaredError other;
  ASSERT_TRUE(other
                  .Update(ctx, Tensor::FromValues({1}, {1}),
                          Tensor::FromValues({1}, {1}))
                  .ok());
  err.Merge(other);
  EXPECT_DOUBLE_EQ(err.MeanSquaredError(), 14.0 / 4.0);
}

}  // namespace
}  // namespace dtf::kernels
