#include "lib/kernels/dropout.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/kernels/test_util.h"

namespace dtf::kernels {
namespace {

using ::testing::HasSubstr;
using testing::RandomTensor;

int64_t CountZeros(const Tensor& t) {
  int64_t zeros = 0;
  for (int64_t i = 0; i < t.size(); ++i) zeros += t[i] == 0.0f ? 1 : 0;
  return zeros;
}

TEST(Dropout, DropsAboutRateAndScalesTheRest) {
  Context ctx = Context::Cpu(1);
  std::mt19937 rng(1);
  // No input is zero, so a zero output is a dropped element.
  Tensor x = RandomTensor({1000, 1000}, rng, -2.0f, 2.0f);
  for (float rate : {0.1f, 0.3f, 0.5f, 0.9f}) {
    SCOPED_TRACE(::testing::Message() << "rate=" << rate);
    Tensor y, mask;
    ASSERT_TRUE(Dropout(ctx, x, rate, 42, &y, &mask).ok());
    ASSERT_EQ(y.shape(), x.shape());
    ASSERT_EQ(mask.shape(), x.shape());
    // The standard deviation of the fraction is below 5e-4.
    const double fraction =
        static_cast<double>(CountZeros(y)) / static_cast<double>(x.size());
    EXPECT_NEAR(fraction, rate, 0.005);
    EXPECT_EQ(CountZeros(mask), CountZeros(y));
    const float scale = 1.0f / (1.0f - rate);
    double kept_sum = 0.0, x_sum = 0.0;
    for (int64_t i = 0; i < x.size(); ++i) {
      ASSERT_TRUE(mask[i] == 0.0f || mask[i] == scale) << i << " " << mask[i];
      ASSERT_EQ(y[i], x[i] * mask[i]) << i;
      kept_sum += std::fabs(y[i]);
      x_sum += std::fabs(x[i]);
    }
    // Inverted dropout keeps the expected magnitude.
    EXPECT_NEAR(kept_sum / x_sum, 1.0, 0.02);
  }
}

TEST(Dropout, RateZeroIsTheIdentity) {
  Context ctx = Context::Cpu(1);
  std::mt19937 rng(2);
  Tensor x = RandomTensor({17, 9}, rng);
  Tensor y, mask;
  ASSERT_TRUE(Dropout(ctx, x, 0.0f, 7, &y, &mask).ok());
  for (int64_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(y[i], x[i]);
    EXPECT_EQ(mask[i], 1.0f);
  }
}

TEST(Dropout, MaskIsAFunctionOfSeedAndIndex) {
  Context ctx = Context::Cpu(1);
  std::mt19937 rng(3);
  Tensor x = RandomTensor({64, 50}, rng);
  Tensor y1, m1, y2, m2;
  ASSERT_TRUE(Dropout(ctx, x, 0.5f, 1234, &y1, &m1).ok());
  ASSERT_TRUE(Dropout(ctx, x, 0.5f, 1234, &y2, &m2).ok());
  for (int64_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(m1[i], m2[i]) << i;
    ASSERT_EQ(y1[i], y2[i]) << i;
  }
  // The shape does not matter, only the flat index: a shorter tensor gets a
  // prefix of the same mask.
  Tensor head = RandomTensor({100}, rng);
  Tensor y3, m3;
  ASSERT_TRUE(Dropout(ctx, head, 0.5f, 1234, &y3, &m3).ok());
  for (int64_t i = 0; i < head.size(); ++i) ASSERT_EQ(m3[i], m1[i]) << i;
}

TEST(Dropout, DifferentSeedsGiveDifferentMasks) {
  Context ctx = Context::Cpu(1);
  std::mt19937 rng(4);
  Tensor x = RandomTensor({100, 100}, rng);
  Tensor y, base;
  ASSERT_TRUE(Dropout(ctx, x, 0.5f, 0, &y, &base).ok());
  // Neighbouring seeds too: the masks must be independent, so about half of
  // the positions differ.
  for (uint64_t seed :
       {uint64_t{1}, uint64_t{2}, uint64_t{0x8000000000000000}, ~uint64_t{0}}) {
    Tensor mask;
    ASSERT_TRUE(Dropout(ctx, x, 0.5f, seed, &y, &mask).ok());
    int64_t differ = 0;
    for (int64_t i = 0; i < x.size(); ++i) differ += mask[i] != base[i];
    EXPECT_NEAR(static_cast<double>(differ) / static_cast<double>(x.size()),
                0.5, 0.03)
        << "seed " << seed;
  }
}

TEST(Dropout, OneAndFourThreadsGiveIdenticalResults) {
  std::mt19937 rng(5);
  Tensor x = RandomTensor({2048, 1024}, rng);
  Tensor dy = RandomTensor({2048, 1024}, rng);
  Context one = Context::Cpu(1);
  Context four = Context::Cpu(4);
  Tensor y1, m1, y4, m4, d1, d4;
  ASSERT_TRUE(Dropout(one, x, 0.25f, 99, &y1, &m1).ok());
  ASSERT_TRUE(Dropout(four, x, 0.25f, 99, &y4, &m4).ok());
  ASSERT_TRUE(DropoutGrad(one, dy, m1, &d1).ok());
  ASSERT_TRUE(DropoutGrad(four, dy, m4, &d4).ok());
  for (int64_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(m1[i], m4[i]) << i;
    ASSERT_EQ(y1[i], y4[i]) << i;
    ASSERT_EQ(d1[i], d4[i]) << i;
  }
}

TEST(Dropout, WorksInPlace) {
  Context ctx = Context::Cpu(1);
  std::mt19937 rng(6);
  Tensor x = RandomTensor({30, 7}, rng);
  Tensor y, mask, mask2;
  ASSERT_TRUE(Dropout(ctx, x, 0.4f, 5, &y, &mask).ok());
  ASSERT_TRUE(Dropout(ctx, x, 0.4f, 5, &x, &mask2).ok());
  for (int64_t i = 0; i < x.size(); ++i) EXPECT_EQ(x[i], y[i]);
  Tensor dy = RandomTensor({30, 7}, rng);
  Tensor dx;
  ASSERT_TRUE(DropoutGrad(ctx, dy, mask, &dx).ok());
  ASSERT_TRUE(DropoutGrad(ctx, dy, mask, &dy).ok());
  for (int64_t i = 0; i < dy.size(); ++i) EXPECT_EQ(dy[i], dx[i]);
}

TEST(Dropout, GradientIsDyTimesMask) {
  Context ctx = Context::Cpu(1);
  std::mt19937 rng(7);
  Tensor x = RandomTensor({40, 11}, rng);
  Tensor dy = RandomTensor({40, 11}, rng);
  Tensor y, mask, dx;
  ASSERT_TRUE(Dropout(ctx, x, 0.3f, 11, &y, &mask).ok());
  ASSERT_TRUE(DropoutGrad(ctx, dy, mask, &dx).ok());
  ASSERT_EQ(dx.shape(), dy.shape());
  const float scale = 1.0f / (1.0f - 0.3f);
  int64_t dropped = 0;
  for (int64_t i = 0; i < dy.size(); ++i) {
    // y is linear in x with slope mask[i].
    if (y[i] == 0.0f) {
      ++dropped;
      EXPECT_EQ(dx[i], 0.0f) << i;
    } else {
      EXPECT_EQ(dx[i], dy[i] * scale) << i;
    }
  }
  EXPECT_GT(dropped, 0);
  EXPECT_LT(dropped, dy.size());
}

TEST(Dropout, RejectsBadArguments) {
  Context ctx = Context::Cpu(1);
  std::mt19937 rng(8);
  Tensor x = RandomTensor({3, 4}, rng);
  Tensor y, mask;
  for (float rate :
       {-0.1f, 1.0f, 1.5f, std::numeric_limits<float>::quiet_NaN()}) {
    const Status s = Dropout(ctx, x, rate, 1, &y, &mask);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << rate;
    EXPECT_THAT(std::string(s.message()), HasSubstr("Dropout: rate"));
  }
  EXPECT_EQ(Dropout(ctx, x, 0.5f, 1, &y, &y).code(),
            StatusCode::kInvalidArgument);
  Tensor dy = RandomTensor({4, 3}, rng);
  ASSERT_TRUE(Dropout(ctx, x, 0.5f, 1, &y, &mask).ok());
  Tensor dx;
  const Status s = DropoutGrad(ctx, dy, mask, &dx);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("DropoutGrad: dy [4, 3] and mask [3, 4]"));
}

}  // namespace
}  // namespace dtf::kernels
