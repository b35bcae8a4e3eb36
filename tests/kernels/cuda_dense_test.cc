// MatMul (cuBLAS), BiasAdd and BiasAddGrad on CUDA against the CPU kernels.
#include <tuple>

#include "lib/kernels/dense.h"
#include "tests/kernels/cuda_test_util.h"

namespace dtf::kernels {
namespace {

using testing::CudaTest;
using testing::ExpectMatchesCpu;
using testing::RandomTensor;

class CudaDenseTest : public CudaTest {};

TEST_F(CudaDenseTest, MatMulEveryTransposeAndScale) {
  const int64_t m = 67, k = 131, n = 45;  // not multiples of any tile
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (float beta : {0.0f, 0.5f}) {
        SCOPED_TRACE(::testing::Message()
                     << "ta=" << ta << " tb=" << tb << " beta=" << beta);
        Tensor a = ta ? RandomTensor({k, m}, rng_) : RandomTensor({m, k}, rng_);
        Tensor b = tb ? RandomTensor({n, k}, rng_) : RandomTensor({k, n}, rng_);
        MatMulOptions o{ta, tb, 1.5f, beta};
        Tensor c_cpu = beta == 0.0f ? Tensor() : RandomTensor({m, n}, rng_);
        Tensor c_gpu = beta == 0.0f ? Poisoned({m, n}) : ToGpu(c_cpu);
        ASSERT_TRUE(MatMul(cpu(), a, b, &c_cpu, o).ok());
        Status st = MatMul(gpu(), ToGpu(a), ToGpu(b), &c_gpu, o);
        ASSERT_TRUE(st.ok()) << st;
        EXPECT_EQ(c_gpu.device(), Device::kCuda);
        ExpectMatchesCpu(ToHost(c_gpu), c_cpu, testing::kReductionRtol,
                         "MatMul");
      }
    }
  }
}

TEST_F(CudaDenseTest, MatMulWithEmptyInnerDimensionGivesZeros) {
  Tensor a = Tensor::Empty({3, 0});
  Tensor b = Tensor::Empty({0, 4});
  Tensor c = Poisoned({3, 4});
  ASSERT_TRUE(MatMul(gpu(), ToGpu(a), ToGpu(b), &c).ok());
  Tensor host = ToHost(c);
  for (int64_t i = 0; i < host.size(); ++i) EXPECT_EQ(host[i], 0.0f);
}

TEST_F(CudaDenseTest, MatMulOutputMovesToTheDevice) {
  Tensor a = RandomTensor({8, 5}, rng_), b = RandomTensor({5, 3}, rng_);
  Tensor c;  // a host tensor: placed on the device by the kernel
  ASSERT_TRUE(MatMul(gpu(), ToGpu(a), ToGpu(b), &c).ok());
  EXPECT_EQ(c.device(), Device::kCuda);
  Tensor expected;
  ASSERT_TRUE(MatMul(cpu(), a, b, &expected).ok());
  ExpectMatchesCpu(ToHost(c), expected, testing::kReductionRtol, "MatMul");
}

TEST_F(CudaDenseTest, AHostInputIsRefused) {
  Tensor a = RandomTensor({2, 2}, rng_), b = RandomTensor({2, 2}, rng_);
  Tensor c;
  Status st = MatMul(gpu(), a, ToGpu(b), &c);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(CudaDenseTest, BiasAddAndItsGradient) {
  for (auto [rows, cols] :
       {std::tuple<int64_t, int64_t>{1, 1}, {300, 77}, {4096, 10}, {0, 5}}) {
    Tensor x = RandomTensor({rows, cols}, rng_);
    Tensor bias = RandomTensor({cols}, rng_);
    Tensor x_gpu = ToGpu(x);
    ASSERT_TRUE(BiasAdd(cpu(), bias, &x).ok());
    ASSERT_TRUE(BiasAdd(gpu(), ToGpu(bias), &x_gpu).ok());
    ExpectMatchesCpu(ToHost(x_gpu), x, testing::kElementwiseRtol, "BiasAdd");

    Tensor dy = RandomTensor({rows, cols}, rng_);
    Tensor db_cpu, db_gpu = Poisoned({cols});
    ASSERT_TRUE(BiasAddGrad(cpu(), dy, &db_cpu).ok());
    ASSERT_TRUE(BiasAddGrad(gpu(), ToGpu(dy), &db_gpu).ok());
    ExpectMatchesCpu(ToHost(db_gpu), db_cpu, testing::kReductionRtol,
                     "BiasAddGrad");
  }
}

TEST_F(CudaDenseTest, ContextReportsItsDevice) {
  EXPECT_EQ(gpu().device(), Device::kCuda);
  EXPECT_EQ(gpu().memory(), Memory::kDevice);
  EXPECT_EQ(gpu().cuda_ordinal(), 0);
  EXPECT_TRUE(gpu().Synchronize().ok());
  StatusOr<std::vector<CudaDeviceInfo>> devices = CudaDevices();
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_FALSE(devices->empty());
  EXPECT_FALSE((*devices)[0].name.empty());
}

}  // namespace
}  // namespace dtf::kernels
