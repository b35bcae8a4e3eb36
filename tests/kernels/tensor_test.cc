#include "lib/kernels/tensor.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "lib/kernels/shape.h"

namespace dtf::kernels {
namespace {

bool Aligned64(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 64 == 0;
}

TEST(Tensor, DefaultIsEmptyVector) {
  Tensor t;
  EXPECT_EQ(t.rank(), 1);
  EXPECT_EQ(t.dim(0), 0);
  EXPECT_EQ(t.size(), 0);
  EXPECT_EQ(t.device(), Device::kCpu);
}

TEST(Tensor, FactoriesFillAndAlign) {
  Tensor z = Tensor::Zeros({3, 5});
  EXPECT_EQ(z.rows(), 3);
  EXPECT_EQ(z.cols(), 5);
  EXPECT_EQ(z.size(), 15);
  EXPECT_TRUE(Aligned64(z.data()));
  for (float v : z.span()) EXPECT_EQ(v, 0.0f);

  Tensor f = Tensor::Filled({2, 2, 2}, 1.5f);
  EXPECT_EQ(f.rank(), 3);
  EXPECT_EQ(f.size(), 8);
  for (float v : f.span()) EXPECT_EQ(v, 1.5f);

  Tensor v = Tensor::FromValues({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(v[4], 5.0f);
  EXPECT_EQ(ShapeString(v.shape()), "[2, 3]");
}

TEST(Tensor, ResizeKeepsStorageWhenItFits) {
  Tensor t = Tensor::Filled({4, 4}, 2.0f);
  const float* data = t.data();
  t.Resize({2, 8});
  EXPECT_EQ(t.data(), data);
  EXPECT_EQ(t[15], 2.0f);
  t.Resize({3, 3});
  EXPECT_EQ(t.data(), data);
  EXPECT_EQ(t.size(), 9);
  t.Resize({5, 5});
  EXPECT_EQ(t.size(), 25);
  EXPECT_TRUE(Aligned64(t.data()));
}

TEST(Tensor, MoveTransfersOwnershipAndCloneCopies) {
  Tensor a = Tensor::FromValues({2}, {7, 8});
  const float* data = a.data();
  Tensor b = std::move(a);
  EXPECT_EQ(b.data(), data);
  Tensor c = b.Clone();
  EXPECT_NE(c.data(), b.data());
  EXPECT_EQ(c.shape(), b.shape());
  EXPECT_EQ(c[1], 8.0f);
}

TEST(Buffer, IdsFactoriesAndResize) {
  IdTensor ids = IdTensor::FromValues({4, 5, 6});
  EXPECT_EQ(ids.size(), 3);
  EXPECT_EQ(ids[2], 6);
  EXPECT_TRUE(Aligned64(ids.data()));
  ids.Resize(1);
  EXPECT_EQ(ids.size(), 1);
  EXPECT_EQ(ids.capacity(), 3);
  EXPECT_EQ(ids[0], 4);
  IdTensor filled = IdTensor::Filled(3, -1);
  EXPECT_EQ(filled[1], -1);
  EXPECT_TRUE(IdTensor::Empty(0).empty());
}

SparseIds MakeIds(std::initializer_list<int64_t> ids,
                  std::initializer_list<int64_t> splits) {
  SparseIds s;
  s.ids = IdTensor::FromValues(ids);
  s.row_splits = IdTensor::FromValues(splits);
  return s;
}

TEST(SparseIds, WellFormedBatchPasses) {
  SparseIds s = MakeIds({1, 2, 3}, {0, 2, 2, 3});
  EXPECT_EQ(s.batch_size(), 3);
  EXPECT_TRUE(CheckSparseIds(s).ok());
  s.weights = Tensor::FromValues({3}, {1, 2, 3});
  EXPECT_TRUE(s.has_weights());
  EXPECT_TRUE(CheckSparseIds(s).ok());
}

TEST(SparseIds, MalformedBatchesAreRejected) {
  EXPECT_EQ(CheckSparseIds(MakeIds({1}, {})).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckSparseIds(MakeIds({1}, {1, 1})).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckSparseIds(MakeIds({1, 2}, {0, 2, 1, 2})).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckSparseIds(MakeIds({1, 2}, {0, 1})).code(),
            StatusCode::kInvalidArgument);
  SparseIds s = MakeIds({1, 2}, {0, 2});
  s.weights = Tensor::FromValues({1}, {1});
  Status status = CheckSparseIds(s);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(Message(status).find("1 weights for 2 ids"), std::string::npos)
      << status;
}

TEST(CheckedNumElements, OverflowAndNegativeDimensionsAreErrors) {
  EXPECT_EQ(CheckedNumElements({}).value_or(-1), 1);
  EXPECT_EQ(CheckedNumElements(std::vector<int64_t>{3, 0, 5}).value_or(-1), 0);
  EXPECT_EQ(
      CheckedNumElements(std::vector<int64_t>{1 << 20, 1 << 20}).value_or(-1),
      int64_t{1} << 40);
  const std::vector<int64_t> huge = {int64_t{1} << 32, int64_t{1} << 32};
  StatusOr<int64_t> n = CheckedNumElements(huge);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(Message(n.status())).find("[4294967296, 4294967296]"),
            std::string::npos);
  EXPECT_FALSE(CheckedNumElements(std::vector<int64_t>{2, -3}).ok());
  // 2^61 elements fit; 2^61 floats (2^63 bytes) do not.
  const std::vector<int64_t> big = {int64_t{1} << 61};
  EXPECT_TRUE(CheckedNumElements(big).ok());
  EXPECT_FALSE(CheckedByteSize(big, sizeof(float)).ok());
  EXPECT_EQ(CheckedByteSize(std::vector<int64_t>{2, 3}, 4).value_or(-1), 24);
}

}  // namespace
}  // namespace dtf::kernels
