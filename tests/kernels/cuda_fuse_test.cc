// Gradient buckets on CUDA against the CPU kernels.
#include <algorithm>
#include <vector>

#include "lib/kernels/fuse.h"
#include "tests/kernels/cuda_test_util.h"

namespace dtf::kernels {
namespace {

using testing::CudaTest;
using testing::ExpectMatchesCpu;
using testing::RandomTensor;

class CudaFuseTest : public CudaTest {};

TEST_F(CudaFuseTest, DenseAndSparsePackAndUnpackAsOnTheCpu) {
  const int64_t table_rows = 1000, cols = 17;
  Tensor dense = RandomTensor({67, 45}, rng_);
  SparseGrad sparse;
  std::vector<int64_t> ids;
  for (int64_t id = 3; id < table_rows; id += 7) ids.push_back(id);
  sparse.ids = IdTensor::FromValues(std::span<const int64_t>(ids));
  sparse.rows = RandomTensor({int64_t(ids.size()), cols}, rng_);
  const int64_t offset = 5;
  const int64_t dense_end = offset + dense.size();
  const int64_t size = dense_end + table_rows * cols + 3;

  Tensor bucket_cpu = Tensor::Filled({size}, 0.25f);
  ASSERT_TRUE(PackDense(cpu(), dense, &bucket_cpu, offset).ok());
  ASSERT_TRUE(
      PackSparse(cpu(), sparse, table_rows, &bucket_cpu, dense_end).ok());

  Tensor bucket_gpu = ToGpu(Tensor::Filled({size}, 0.25f));
  Status st = PackDense(gpu(), ToGpu(dense), &bucket_gpu, offset);
  ASSERT_TRUE(st.ok()) << st;
  SparseGrad sparse_gpu;
  sparse_gpu.ids = ToGpu(sparse.ids);
  sparse_gpu.rows = ToGpu(sparse.rows);
  st = PackSparse(gpu(), sparse_gpu, table_rows, &bucket_gpu, dense_end);
  ASSERT_TRUE(st.ok()) << st;
  ExpectMatchesCpu(ToHost(bucket_gpu), bucket_cpu, testing::kElementwiseRtol,
                   "bucket");

  const std::vector<int64_t> table_shape = {table_rows, cols};
  Tensor out_gpu = Poisoned(table_shape);
  st = Unpack(gpu(), bucket_gpu, dense_end, table_shape, &out_gpu);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(out_gpu.device(), Device::kCuda);
  Tensor out_cpu;
  ASSERT_TRUE(Unpack(cpu(), bucket_cpu, dense_end, table_shape, &out_cpu).ok());
  ExpectMatchesCpu(ToHost(out_gpu), out_cpu, testing::kElementwiseRtol,
                   "unpacked table");

  Tensor dense_out;  // placed on the device by Unpack
  st = Unpack(gpu(), bucket_gpu, offset, dense.shape(), &dense_out);
  ASSERT_TRUE(st.ok()) << st;
  ExpectMatchesCpu(ToHost(dense_out), dense, 0.0, "unpacked dense");
}

TEST_F(CudaFuseTest, SparseWithoutRowsZeroesItsBlock) {
  SparseGrad sparse;
  sparse.ids = ToGpu(IdTensor());
  sparse.rows = ToGpu(Tensor::Empty({0, 3}));
  Tensor bucket = Poisoned({12});
  Status st = PackSparse(gpu(), sparse, 4, &bucket, 0);
  ASSERT_TRUE(st.ok()) << st;
  ExpectMatchesCpu(ToHost(bucket), Tensor::Zeros({12}), 0.0, "bucket");
}

TEST_F(CudaFuseTest, HostOperandsAreRefusedOnACudaContext) {
  Tensor bucket = Poisoned({4});
  Tensor grad = Tensor::Zeros({2});
  EXPECT_EQ(PackDense(gpu(), grad, &bucket, 0).code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dtf::kernels
