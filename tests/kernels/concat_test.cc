#include "lib/kernels/concat.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/kernels/test_util.h"

namespace dtf::kernels {
namespace {

using ::testing::HasSubstr;
using testing::RandomTensor;

TEST(ConcatColumns, PlacesPartsSideBySideAndSplitReverses) {
  Context ctx = Context::Cpu(1);
  std::mt19937 rng(1);
  const int64_t n = 5;
  Tensor a = RandomTensor({n, 3}, rng);
  Tensor empty = Tensor::Zeros({n, 0});
  Tensor b = RandomTensor({n, 4}, rng);
  Tensor c = RandomTensor({n, 1}, rng);
  const Tensor* parts[] = {&a, &empty, &b, &c};
  Tensor out;
  ASSERT_TRUE(ConcatColumns(ctx, parts, &out).ok());
  ASSERT_EQ(out.shape(), (std::vector<int64_t>{n, 8}));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(out[i * 8 + j], a[i * 3 + j]);
    for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(out[i * 8 + 3 + j], b[i * 4 + j]);
    EXPECT_EQ(out[i * 8 + 7], c[i]);
  }

  // Outputs of any old shape are resized.
  Tensor pa = RandomTensor({2, 2}, rng);
  Tensor pe = RandomTensor({7}, rng);
  Tensor pb;
  Tensor pc = RandomTensor({1, 1}, rng);
  const int64_t widths[] = {3, 0, 4, 1};
  Tensor* outs[] = {&pa, &pe, &pb, &pc};
  ASSERT_TRUE(SplitColumns(ctx, out, widths, outs).ok());
  const Tensor* originals[] = {&a, &empty, &b, &c};
  for (int p = 0; p < 4; ++p) {
    ASSERT_EQ(outs[p]->shape(), originals[p]->shape()) << p;
    for (int64_t i = 0; i < outs[p]->size(); ++i) {
      EXPECT_EQ((*outs[p])[i], (*originals[p])[i]) << p << " " << i;
    }
  }
}

TEST(ConcatColumns, OnePartIsACopy) {
  Context ctx = Context::Cpu(1);
  std::mt19937 rng(2);
  Tensor a = RandomTensor({4, 6}, rng);
  const Tensor* parts[] = {&a};
  Tensor out;
  ASSERT_TRUE(ConcatColumns(ctx, parts, &out).ok());
  ASSERT_EQ(out.shape(), a.shape());
  for (int64_t i = 0; i < a.size(); ++i) EXPECT_EQ(out[i], a[i]);
}

TEST(ConcatColumns, OneAndFourThreadsGiveIdenticalResults) {
  std::mt19937 rng(3);
  const int64_t n = 20000;
  Tensor a = RandomTensor({n, 13}, rng);
  Tensor b = RandomTensor({n, 64}, rng);
  Tensor c = RandomTensor({n, 3}, rng);
  const Tensor* parts[] = {&a, &b, &c};
  const int64_t widths[] = {13, 64, 3};
  Tensor out[2];
  Tensor back[2][3];
  int k = 0;
  for (int threads : {1, 4}) {
    Context ctx = Context::Cpu(threads);
    ASSERT_TRUE(ConcatColumns(ctx, parts, &out[k]).ok());
    Tensor* outs[] = {&back[k][0], &back[k][1], &back[k][2]};
    ASSERT_TRUE(SplitColumns(ctx, out[k], widths, outs).ok());
    ++k;
  }
  for (int64_t i = 0; i < out[0].size(); ++i) ASSERT_EQ(out[0][i], out[1][i]);
  for (int p = 0; p < 3; ++p) {
    for (int64_t i = 0; i < parts[p]->size(); ++i) {
      ASSERT_EQ(back[1][p][i], (*parts[p])[i]) << p << " " << i;
    }
  }
}

TEST(ConcatColumns, RejectsBadParts) {
  Context ctx = Context::Cpu(1);
  std::mt19937 rng(4);
  Tensor a = RandomTensor({4, 2}, rng);
  Tensor b = RandomTensor({3, 2}, rng);
  Tensor v = RandomTensor({4}, rng);
  Tensor out;
  EXPECT_EQ(ConcatColumns(ctx, {}, &out).code(), StatusCode::kInvalidArgument);
  const Tensor* mismatched[] = {&a, &b};
  const Status s = ConcatColumns(ctx, mismatched, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("ConcatColumns: part 1 [3, 2]"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("part 0 [4, 2]"));
  const Tensor* vector[] = {&a, &v};
  EXPECT_EQ(ConcatColumns(ctx, vector, &out).code(),
            StatusCode::kInvalidArgument);
  const Tensor* aliased[] = {&a, &out};
  EXPECT_EQ(ConcatColumns(ctx, aliased, &out).code(),
            StatusCode::kInvalidArgument);
  const Tensor* null[] = {&a, nullptr};
  EXPECT_EQ(ConcatColumns(ctx, null, &out).code(),
            StatusCode::kInvalidArgument);
}

TEST(SplitColumns, RejectsBadWidthsAndParts) {
  Context ctx = Context::Cpu(1);
  std::mt19937 rng(5);
  Tensor x = RandomTensor({4, 5}, rng);
  Tensor p0, p1;
  Tensor* parts[] = {&p0, &p1};
  const int64_t short_widths[] = {2, 2};
  Status s = SplitColumns(ctx, x, short_widths, parts);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("SplitColumns: widths sum to 4 but x [4, 5]"));
  const int64_t negative[] = {6, -1};
  EXPECT_EQ(SplitColumns(ctx, x, negative, parts).code(),
            StatusCode::kInvalidArgument);
  const int64_t three[] = {1, 2, 2};
  EXPECT_EQ(SplitColumns(ctx, x, three, parts).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(SplitColumns(ctx, x, {}, {}).code(), StatusCode::kInvalidArgument);
  const int64_t widths[] = {2, 3};
  Tensor* repeated[] = {&p0, &p0};
  EXPECT_EQ(SplitColumns(ctx, x, widths, repeated).code(),
            StatusCode::kInvalidArgument);
  Tensor* into_x[] = {&p0, &x};
  EXPECT_EQ(SplitColumns(ctx, x, widths, into_x).code(),
            StatusCode::kInvalidArgument);
  Tensor v = RandomTensor({5}, rng);
  EXPECT_EQ(SplitColumns(ctx, v, widths, parts).code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(SplitColumns(ctx, x, widths, parts).ok());
}

TEST(AddInPlace, AddsElementwise) {
  Context ctx = Context::Cpu(1);
  std::mt19937 rng(6);
  Tensor x = RandomTensor({6, 7}, rng);
  Tensor y = RandomTensor({6, 7}, rng);
  Tensor before = y.Clone();
  ASSERT_TRUE(AddInPlace(ctx, x, &y).ok());
  for (int64_t i = 0; i < y.size(); ++i) EXPECT_EQ(y[i], before[i] + x[i]);
  // y may be x: doubles it.
  Tensor z = x.Clone();
  ASSERT_TRUE(AddInPlace(ctx, z, &z).ok());
  for (int64_t i = 0; i < z.size(); ++i) EXPECT_EQ(z[i], 2.0f * x[i]);
}

TEST(AddInPlace, LargeTensorsOnThreads) {
  std::mt19937 rng(7);
  Tensor x = RandomTensor({1500, 1000}, rng);
  Tensor y = RandomTensor({1500, 1000}, rng);
  Tensor y4 = y.Clone();
  Tensor before = y.Clone();
  ASSERT_TRUE(AddInPlace(Context::Cpu(1), x, &y).ok());
  ASSERT_TRUE(AddInPlace(Context::Cpu(4), x, &y4).ok());
  for (int64_t i = 0; i < y.size(); ++i) {
    ASSERT_EQ(y[i], before[i] + x[i]) << i;
    ASSERT_EQ(y4[i], y[i]) << i;
  }
}

TEST(AddInPlace, RejectsMismatchedShapes) {
  Context ctx = Context::Cpu(1);
  std::mt19937 rng(8);
  Tensor x = RandomTensor({2, 3}, rng);
  Tensor y = RandomTensor({3, 2}, rng);
  const Status s = AddInPlace(ctx, x, &y);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("AddInPlace: x [2, 3] and y [3, 2] differ in shape"));
}

}  // namespace
}  // namespace dtf::kernels
