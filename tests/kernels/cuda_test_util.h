// Helpers for the tests of the CUDA kernels (cuda_*_test.cc): each test runs
// a kernel on a CUDA context and on the CPU on the same fresh random inputs
// and compares. Outputs on the device are poisoned with NaN beforehand and
// sized as the kernel will size them, so an element the kernel forgets to
// write shows up as NaN. Without a CUDA device (or a build without CUDA)
// every such test is skipped, saying why.
#pragma once

#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "lib/base/status.h"
#include "lib/kernels/context.h"
#include "lib/kernels/tensor.h"
#include "lib/kernels/transfer.h"
#include "tests/kernels/test_util.h"

namespace dtf::kernels::testing {

// A test fixture holding a CPU context and, when one can be made, a CUDA
// context on device 0; SetUp skips the test otherwise.
class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StatusOr<Context> cuda = Context::Cuda(0);
    if (!cuda.ok()) {
      GTEST_SKIP() << "no CUDA device to test on: " << cuda.status();
    }
    gpu_.emplace(*std::move(cuda));
  }

  // A copy of host tensor t on the device.
  Tensor ToGpu(const Tensor& t) {
    Tensor d;
    EXPECT_TRUE(CopyToDevice(gpu(), t, &d).ok());
    return d;
  }
  IdTensor ToGpu(const IdTensor& t) {
    IdTensor d;
    EXPECT_TRUE(CopyToDevice(gpu(), t, &d).ok());
    return d;
  }
  SparseIds ToGpu(const SparseIds& s) {
    SparseIds d;
    EXPECT_TRUE(CopyToDevice(gpu(), s, &d).ok());
    return d;
  }
  // A host copy of device tensor t (waits for the stream; fails the test on
  // an asynchronous error).
  Tensor ToHost(const Tensor& t) {
    Tensor h;
    Status st = CopyToHost(gpu(), t, &h);
    EXPECT_TRUE(st.ok()) << st;
    return h;
  }
  IdTensor ToHost(const IdTensor& t) {
    IdTensor h;
    Status st = CopyToHost(gpu(), t, &h);
    EXPECT_TRUE(st.ok()) << st;
    return h;
  }
  // A device tensor of `shape` full of NaN: an output whose every element
  // the kernel must write.
  Tensor Poisoned(std::span<const int64_t> shape) {
    Tensor host =
        Tensor::Filled(shape, std::numeric_limits<float>::quiet_NaN());
    return ToGpu(host);
  }
  Tensor Poisoned(std::initializer_list<int64_t> shape) {
    return Poisoned(std::span<const int64_t>(shape.begin(), shape.size()));
  }
  // A device id tensor of n elements, all -7777.
  IdTensor PoisonedIds(int64_t n) { return ToGpu(IdTensor::Filled(n, -7777)); }

  const Context& cpu() const { return cpu_; }
  const Context& gpu() const { return *gpu_; }

  std::mt19937 rng_{20261122};

 private:
  Context cpu_ = Context::Cpu(1);
  std::optional<Context> gpu_;
};

// The device result (copied back) against the CPU result: same shape, every
// element within rtol relative (and rtol absolute near zero), none NaN.
inline void ExpectMatchesCpu(const Tensor& gpu_on_host, const Tensor& cpu,
                             double rtol, const std::string& what) {
  ASSERT_EQ(gpu_on_host.shape(), cpu.shape()) << what;
  for (int64_t i = 0; i < gpu_on_host.size(); ++i) {
    ASSERT_FALSE(std::isnan(gpu_on_host[i]))
        << what << ": element " << i << " was never written";
  }
  ExpectClose(gpu_on_host, AsDoubles(cpu), rtol, rtol, what);
}

inline void ExpectIdsEqual(const IdTensor& gpu_on_host, const IdTensor& cpu,
                           const std::string& what) {
  ASSERT_EQ(gpu_on_host.size(), cpu.size()) << what;
  for (int64_t i = 0; i < cpu.size(); ++i) {
    ASSERT_EQ(gpu_on_host[i], cpu[i]) << what << ": element " << i;
  }
}

// float32 tolerance for results of a few operations per element, and for
// long sums (reductions, GEMM over K of about a thousand).
inline constexpr double kElementwiseRtol = 1e-5;
inline constexpr double kReductionRtol = 1e-4;

}  // namespace dtf::kernels::testing
