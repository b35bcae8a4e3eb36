// Gradient buckets on the CPU: packing dense and sparse gradients and
// unpacking them again.
#include "lib/kernels/fuse.h"

#include <vector>

#include "gtest/gtest.h"
#include "tests/kernels/test_util.h"

namespace dtf::kernels {
namespace {

const Context& Cpu() {
  static const Context ctx = Context::Cpu(1);
  return ctx;
}

std::vector<float> Values(const Tensor& t) {
  return std::vector<float>(t.data(), t.data() + t.size());
}

TEST(FuseTest, DenseRoundTripsAtAnOffset) {
  Tensor grad = Tensor::FromValues({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor bucket = Tensor::Filled({10}, -1.0f);
  ASSERT_TRUE(PackDense(Cpu(), grad, &bucket, 3).ok());
  EXPECT_EQ(Values(bucket),
            (std::vector<float>{-1, -1, -1, 1, 2, 3, 4, 5, 6, -1}));
  Tensor out;
  ASSERT_TRUE(Unpack(Cpu(), bucket, 3, grad.shape(), &out).ok());
  EXPECT_EQ(out.shape(), grad.shape());
  EXPECT_EQ(Values(out), Values(grad));
}

TEST(FuseTest, SparseIsDensifiedWithZerosElsewhere) {
  SparseGrad grad;
  grad.ids = IdTensor::FromValues({0, 2});
  grad.rows = Tensor::FromValues({2, 2}, {1, 2, 5, 6});
  Tensor bucket = Tensor::Filled({9}, -1.0f);
  ASSERT_TRUE(PackSparse(Cpu(), grad, 3, &bucket, 1).ok());
  EXPECT_EQ(Values(bucket), (std::vector<float>{-1, 1, 2, 0, 0, 5, 6, -1, -1}));
  Tensor out;
  const std::vector<int64_t> shape = {3, 2};
  ASSERT_TRUE(Unpack(Cpu(), bucket, 1, shape, &out).ok());
  EXPECT_EQ(Values(out), (std::vector<float>{1, 2, 0, 0, 5, 6}));
}

TEST(FuseTest, SparseWithoutRowsIsAllZeros) {
  SparseGrad grad;
  grad.rows = Tensor::Empty({0, 4});
  Tensor bucket = Tensor::Filled({8}, -1.0f);
  ASSERT_TRUE(PackSparse(Cpu(), grad, 2, &bucket, 0).ok());
  EXPECT_EQ(Values(bucket), std::vector<float>(8, 0.0f));
}

TEST(FuseTest, PackedGradientsKeepTheirPlaces) {
  // Two gradients in one bucket, unpacked in any order.
  Tensor a = Tensor::FromValues({3}, {1, 2, 3});
  SparseGrad b;
  b.ids = IdTensor::FromValues({1});
  b.rows = Tensor::FromValues({1, 2}, {7, 8});
  Tensor bucket = Tensor::Empty({7});
  ASSERT_TRUE(PackDense(Cpu(), a, &bucket, 0).ok());
  ASSERT_TRUE(PackSparse(Cpu(), b, 2, &bucket, 3).ok());
  Tensor out_b, out_a;
  const std::vector<int64_t> b_shape = {2, 2};
  ASSERT_TRUE(Unpack(Cpu(), bucket, 3, b_shape, &out_b).ok());
  ASSERT_TRUE(Unpack(Cpu(), bucket, 0, a.shape(), &out_a).ok());
  EXPECT_EQ(Values(out_a), Values(a));
  EXPECT_EQ(Values(out_b), (std::vector<float>{0, 0, 7, 8}));
}

TEST(FuseTest, RangesOutsideTheBucketAreRefused) {
  Tensor bucket = Tensor::Zeros({4});
  Tensor grad = Tensor::Zeros({3});
  Status st = PackDense(Cpu(), grad, &bucket, 2);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("do not fit a bucket of 4"),
            std::string_view::npos)
      << st;
  EXPECT_EQ(PackDense(Cpu(), grad, &bucket, -1).code(),
            StatusCode::kInvalidArgument);
  Tensor out;
  const std::vector<int64_t> shape = {2, 2};
  EXPECT_EQ(Unpack(Cpu(), bucket, 1, shape, &out).code(),
            StatusCode::kInvalidArgument);

  SparseGrad sparse;
  sparse.ids = IdTensor::FromValues({0});
  sparse.rows = Tensor::Zeros({1, 2});
  EXPECT_EQ(PackSparse(Cpu(), sparse, 3, &bucket, 0).code(),
            StatusCode::kInvalidArgument);
}

TEST(FuseTest, SparseIdsOutsideTheTableAreRefusedBeforeWriting) {
  SparseGrad grad;
  grad.ids = IdTensor::FromValues({1, 3});
  grad.rows = Tensor::Zeros({2, 1});
  Tensor bucket = Tensor::Filled({3}, -1.0f);
  Status st = PackSparse(Cpu(), grad, 3, &bucket, 0);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("id 3 is outside a table of 3 rows"),
            std::string_view::npos)
      << st;
  EXPECT_EQ(Values(bucket), std::vector<float>(3, -1.0f));
}

TEST(FuseTest, SparseRowsMustMatchTheIds) {
  SparseGrad grad;
  grad.ids = IdTensor::FromValues({0, 1});
  grad.rows = Tensor::Zeros({1, 2});
  Tensor bucket = Tensor::Zeros({8});
  EXPECT_EQ(PackSparse(Cpu(), grad, 4, &bucket, 0).code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dtf::kernels
