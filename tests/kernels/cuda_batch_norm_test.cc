// BatchNormTrain, BatchNormInfer and BatchNormGrad on CUDA against the CPU
// kernels.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "lib/kernels/batch_norm.h"
#include "tests/kernels/cuda_test_util.h"

namespace dtf::kernels {
namespace {

using testing::CudaTest;
using testing::ExpectMatchesCpu;
using testing::kElementwiseRtol;
using testing::kReductionRtol;
using testing::RandomTensor;

struct Shape2 {
  int64_t n;
  int64_t d;
};

// Batches around the kernels' chunking: one row, fewer rows than a chunk,
// several chunks with a partial last one, and more rows than 1024 chunks of
// 64 (so chunks grow); columns odd, one, or none.
const std::vector<Shape2>& TrainShapes() {
  static const std::vector<Shape2> shapes = {{1, 1},     {1, 40},   {37, 5},
                                             {300, 77},  {5000, 3}, {3, 0},
                                             {70001, 2}, {129, 300}};
  return shapes;
}

std::string Name(const Shape2& s) {
  return "[" + std::to_string(s.n) + ", " + std::to_string(s.d) + "]";
}

// Exact equality, bit for bit: a second run on the device must repeat the
// first.
void ExpectBitIdentical(const Tensor& a, const Tensor& b,
                        const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  ASSERT_EQ(a.size() == 0 ? 0 : std::memcmp(a.data(), b.data(), a.size() * 4),
            0)
      << what;
}

// One layer's operands on the host.
struct Operands {
  Tensor x, gamma, beta, moving_mean, moving_variance;
};

class CudaBatchNormTest : public CudaTest {
 protected:
  Operands RandomOperands(const Shape2& s) {
    Operands o;
    // Off-centre, so the means are far from zero.
    o.x = RandomTensor({s.n, s.d}, rng_, -2.0f, 5.0f);
    o.gamma = RandomTensor({s.d}, rng_, 0.5f, 2.0f);
    o.beta = RandomTensor({s.d}, rng_);
    o.moving_mean = RandomTensor({s.d}, rng_);
    o.moving_variance = RandomTensor({s.d}, rng_, 0.5f, 2.0f);
    return o;
  }
  Operands OnGpu(const Operands& o) {
    return {ToGpu(o.x), ToGpu(o.gamma), ToGpu(o.beta), ToGpu(o.moving_mean),
            ToGpu(o.moving_variance)};
  }
  BatchNormCache PoisonedCache(const Shape2& s) {
    return {Poisoned({s.n, s.d}), Poisoned({s.d})};
  }
};

TEST_F(CudaBatchNormTest, TrainMatchesTheCpu) {
  const BatchNormOptions options{1e-3f, 0.9f};
  for (const Shape2& s : TrainShapes()) {
    const std::string what = "BatchNormTrain " + Name(s);
    Operands cpu_ops = RandomOperands(s);
    Operands gpu_ops = OnGpu(cpu_ops);
    Tensor y_cpu;
    BatchNormCache cache_cpu;
    ASSERT_TRUE(BatchNormTrain(cpu(), cpu_ops.x, cpu_ops.gamma, cpu_ops.beta,
                               &cpu_ops.moving_mean, &cpu_ops.moving_variance,
                               options, &y_cpu, &cache_cpu)
                    .ok());
    Tensor y = Poisoned({s.n, s.d});
    BatchNormCache cache = PoisonedCache(s);
    Status st = BatchNormTrain(gpu(), gpu_ops.x, gpu_ops.gamma, gpu_ops.beta,
                               &gpu_ops.moving_mean, &gpu_ops.moving_variance,
                               options, &y, &cache);
    ASSERT_TRUE(st.ok()) << what << ": " << st;
    ExpectMatchesCpu(ToHost(y), y_cpu, kReductionRtol, what + " y");
    ExpectMatchesCpu(ToHost(cache.xhat), cache_cpu.xhat, kReductionRtol,
                     what + " xhat");
    ExpectMatchesCpu(ToHost(cache.inv_std), cache_cpu.inv_std, kReductionRtol,
                     what + " inv_std");
    ExpectMatchesCpu(ToHost(gpu_ops.moving_mean), cpu_ops.moving_mean,
                     kReductionRtol, what + " moving_mean");
    ExpectMatchesCpu(ToHost(gpu_ops.moving_variance), cpu_ops.moving_variance,
                     kReductionRtol, what + " moving_variance");
  }
}

TEST_F(CudaBatchNormTest, TrainInPlaceAndRepeatable) {
  const Shape2 s{3001, 19};
  Operands host = RandomOperands(s);
  Operands first = OnGpu(host);
  Operands second = OnGpu(host);
  Tensor y = Poisoned({s.n, s.d});
  BatchNormCache cache1 = PoisonedCache(s), cache2 = PoisonedCache(s);
  ASSERT_TRUE(BatchNormTrain(gpu(), first.x, first.gamma, first.beta,
                             &first.moving_mean, &first.moving_variance, {}, &y,
                             &cache1)
                  .ok());
  // y being x, on a second copy of the same operands: bit for bit the same.
  ASSERT_TRUE(BatchNormTrain(gpu(), second.x, second.gamma, second.beta,
                             &second.moving_mean, &second.moving_variance, {},
                             &second.x, &cache2)
                  .ok());
  ExpectBitIdentical(ToHost(second.x), ToHost(y), "y in place");
  ExpectBitIdentical(ToHost(cache2.xhat), ToHost(cache1.xhat), "xhat");
  ExpectBitIdentical(ToHost(cache2.inv_std), ToHost(cache1.inv_std), "inv_std");
  ExpectBitIdentical(ToHost(second.moving_mean), ToHost(first.moving_mean),
                     "moving_mean");
  ExpectBitIdentical(ToHost(second.moving_variance),
                     ToHost(first.moving_variance), "moving_variance");
}

TEST_F(CudaBatchNormTest, TrainOutputsMoveToTheDevice) {
  const Shape2 s{10, 4};
  Operands host = RandomOperands(s);
  Operands dev = OnGpu(host);
  Tensor y;  // host tensors: the kernel places them on the device
  BatchNormCache cache;
  ASSERT_TRUE(BatchNormTrain(gpu(), dev.x, dev.gamma, dev.beta,
                             &dev.moving_mean, &dev.moving_variance, {}, &y,
                             &cache)
                  .ok());
  EXPECT_EQ(y.device(), Device::kCuda);
  EXPECT_EQ(cache.xhat.device(), Device::kCuda);
  EXPECT_EQ(cache.inv_std.device(), Device::kCuda);
  Tensor y_cpu;
  BatchNormCache cache_cpu;
  ASSERT_TRUE(BatchNormTrain(cpu(), host.x, host.gamma, host.beta,
                             &host.moving_mean, &host.moving_variance, {},
                             &y_cpu, &cache_cpu)
                  .ok());
  ExpectMatchesCpu(ToHost(y), y_cpu, kReductionRtol, "y");
}

TEST_F(CudaBatchNormTest, InferMatchesTheCpu) {
  std::vector<Shape2> shapes = TrainShapes();
  shapes.push_back({0, 4});
  const BatchNormOptions options{1e-2f, 0.5f};
  for (const Shape2& s : shapes) {
    const std::string what = "BatchNormInfer " + Name(s);
    Operands host = RandomOperands(s);
    Operands dev = OnGpu(host);
    Tensor expected;
    ASSERT_TRUE(BatchNormInfer(cpu(), host.x, host.gamma, host.beta,
                               host.moving_mean, host.moving_variance, options,
                               &expected)
                    .ok());
    Tensor y = Poisoned({s.n, s.d});
    Status st =
        BatchNormInfer(gpu(), dev.x, dev.gamma, dev.beta, dev.moving_mean,
                       dev.moving_variance, options, &y);
    ASSERT_TRUE(st.ok()) << what << ": " << st;
    ExpectMatchesCpu(ToHost(y), expected, kElementwiseRtol, what);
    // y being x.
    st = BatchNormInfer(gpu(), dev.x, dev.gamma, dev.beta, dev.moving_mean,
                        dev.moving_variance, options, &dev.x);
    ASSERT_TRUE(st.ok()) << what << ": " << st;
    ExpectMatchesCpu(ToHost(dev.x), expected, kElementwiseRtol,
                     what + " in place");
  }
}

TEST_F(CudaBatchNormTest, GradMatchesTheCpuAndRepeats) {
  for (const Shape2& s : TrainShapes()) {
    const std::string what = "BatchNormGrad " + Name(s);
    Operands host = RandomOperands(s);
    Tensor y;
    BatchNormCache cache_cpu;
    ASSERT_TRUE(BatchNormTrain(cpu(), host.x, host.gamma, host.beta,
                               &host.moving_mean, &host.moving_variance, {}, &y,
                               &cache_cpu)
                    .ok());
    Tensor dy = RandomTensor({s.n, s.d}, rng_);
    Tensor dx_cpu, dgamma_cpu, dbeta_cpu;
    ASSERT_TRUE(BatchNormGrad(cpu(), dy, host.gamma, cache_cpu, &dx_cpu,
                              &dgamma_cpu, &dbeta_cpu)
                    .ok());

    // The same cache on the device, so both sides start from one xhat.
    BatchNormCache cache{ToGpu(cache_cpu.xhat), ToGpu(cache_cpu.inv_std)};
    Tensor dy_gpu = ToGpu(dy);
    Tensor gamma_gpu = ToGpu(host.gamma);
    Tensor dx = Poisoned({s.n, s.d});
    Tensor dgamma = Poisoned({s.d}), dbeta = Poisoned({s.d});
    Status st =
        BatchNormGrad(gpu(), dy_gpu, gamma_gpu, cache, &dx, &dgamma, &dbeta);
    ASSERT_TRUE(st.ok()) << what << ": " << st;
    ExpectMatchesCpu(ToHost(dx), dx_cpu, kReductionRtol, what + " dx");
    ExpectMatchesCpu(ToHost(dgamma), dgamma_cpu, kReductionRtol,
                     what + " dgamma");
    ExpectMatchesCpu(ToHost(dbeta), dbeta_cpu, kReductionRtol, what + " dbeta");

    // dx being dy, and fresh dgamma / dbeta: bit for bit the first run.
    Tensor dgamma2 = Poisoned({s.d}), dbeta2 = Poisoned({s.d});
    st = BatchNormGrad(gpu(), dy_gpu, gamma_gpu, cache, &dy_gpu, &dgamma2,
                       &dbeta2);
    ASSERT_TRUE(st.ok()) << what << ": " << st;
    ExpectBitIdentical(ToHost(dy_gpu), ToHost(dx), what + " dx in place");
    ExpectBitIdentical(ToHost(dgamma2), ToHost(dgamma), what + " dgamma");
    ExpectBitIdentical(ToHost(dbeta2), ToHost(dbeta), what + " dbeta");
  }
}

TEST_F(CudaBatchNormTest, HostOperandsAreRefused) {
  constexpr absl::StatusCode kInvalid = absl::StatusCode::kInvalidArgument;
  const Shape2 s{6, 3};
  Operands host = RandomOperands(s);
  Operands dev = OnGpu(host);
  Tensor y;
  BatchNormCache cache;
  EXPECT_EQ(BatchNormTrain(gpu(), host.x, dev.gamma, dev.beta, &dev.moving_mean,
                           &dev.moving_variance, {}, &y, &cache)
                .code(),
            kInvalid);
  // The moving statistics are updated in place: never moved, refused.
  EXPECT_EQ(BatchNormTrain(gpu(), dev.x, dev.gamma, dev.beta, &host.moving_mean,
                           &dev.moving_variance, {}, &y, &cache)
                .code(),
            kInvalid);
  EXPECT_EQ(BatchNormInfer(gpu(), dev.x, host.gamma, dev.beta, dev.moving_mean,
                           dev.moving_variance, {}, &y)
                .code(),
            kInvalid);
  ASSERT_TRUE(BatchNormTrain(gpu(), dev.x, dev.gamma, dev.beta,
                             &dev.moving_mean, &dev.moving_variance, {}, &y,
                             &cache)
                  .ok());
  Tensor dy = RandomTensor({s.n, s.d}, rng_);
  Tensor dx, dgamma, dbeta;
  EXPECT_EQ(
      BatchNormGrad(gpu(), dy, dev.gamma, cache, &dx, &dgamma, &dbeta).code(),
      kInvalid);
  BatchNormCache host_cache{ToHost(cache.xhat), ToHost(cache.inv_std)};
  EXPECT_EQ(BatchNormGrad(gpu(), ToGpu(dy), dev.gamma, host_cache, &dx, &dgamma,
                          &dbeta)
                .code(),
            kInvalid);
}

}  // namespace
}  // namespace dtf::kernels
