// The activations, Dropout, ConcatColumns / SplitColumns / AddInPlace and
// Normalize on CUDA against the CPU kernels.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "lib/kernels/activation.h"
#include "lib/kernels/concat.h"
#include "lib/kernels/dropout.h"
#include "lib/kernels/feature_transforms.h"
#include "tests/kernels/cuda_test_util.h"

namespace dtf::kernels {
namespace {

using testing::CudaTest;
using testing::ExpectMatchesCpu;
using testing::kElementwiseRtol;
using testing::RandomTensor;

using Shape = std::vector<int64_t>;
using UnaryFn = Status (*)(const Context&, const Tensor&, Tensor*);
using GradFn = Status (*)(const Context&, const Tensor&, const Tensor&,
                          Tensor*);

// Shapes around warp, block and grid sizes: empty, one element, odd sizes,
// rank 3, and more elements than BlocksFor's 4096 blocks of 256 threads
// cover in one step of the grid-stride loop.
const std::vector<Shape>& TestShapes() {
  static const std::vector<Shape> shapes = {
      {0}, {1}, {31}, {37, 33}, {3, 5, 7}, {0, 9}, {1100, 1001}};
  return shapes;
}

int64_t NumElements(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Values uniform in [lo, hi), none within 0.01 of zero, in any shape.
Tensor RandomOfShape(std::span<const int64_t> shape, std::mt19937& rng,
                     float lo = -1.0f, float hi = 1.0f) {
  Tensor flat = RandomTensor({NumElements(shape)}, rng, lo, hi);
  Tensor t = Tensor::Empty(shape);
  if (t.size() > 0) std::memcpy(t.data(), flat.data(), t.size() * 4);
  return t;
}

// Exact equality, bit for bit: results the CUDA kernel must reproduce, not
// approximate (copies, the dropout mask).
void ExpectBitIdentical(const Tensor& gpu_on_host, const Tensor& cpu,
                        const std::string& what) {
  ASSERT_EQ(gpu_on_host.shape(), cpu.shape()) << what;
  for (int64_t i = 0; i < cpu.size(); ++i) {
    uint32_t a = 0, b = 0;
    std::memcpy(&a, gpu_on_host.data() + i, 4);
    std::memcpy(&b, cpu.data() + i, 4);
    ASSERT_EQ(a, b) << what << ": element " << i << " is " << gpu_on_host[i]
                    << ", expected " << cpu[i];
  }
}

std::string ShapeName(const Shape& shape) { return ShapeString(shape); }

class CudaElementwiseTest : public CudaTest {
 protected:
  // ConcatColumns of parts of `widths` columns and `rows` rows, then
  // SplitColumns of the result, against the CPU: both only copy, so the
  // results are bit-identical.
  void ConcatAndSplit(int64_t rows, const std::vector<int64_t>& widths) {
    const std::string what = "rows " + std::to_string(rows) + ", " +
                             std::to_string(widths.size()) + " parts";
    std::vector<Tensor> parts, parts_gpu;
    int64_t total = 0;
    for (int64_t w : widths) {
      parts.push_back(RandomOfShape(Shape{rows, w}, rng_));
      parts_gpu.push_back(ToGpu(parts.back()));
      total += w;
    }
    std::vector<const Tensor*> ptrs, ptrs_gpu;
    for (size_t p = 0; p < parts.size(); ++p) {
      ptrs.push_back(&parts[p]);
      ptrs_gpu.push_back(&parts_gpu[p]);
    }
    Tensor expected;
    ASSERT_TRUE(ConcatColumns(cpu(), ptrs, &expected).ok()) << what;
    Tensor out = Poisoned({rows, total});
    Status st = ConcatColumns(gpu(), ptrs_gpu, &out);
    ASSERT_TRUE(st.ok()) << what << ": " << st;
    ExpectBitIdentical(ToHost(out), expected, "ConcatColumns " + what);

    std::vector<Tensor> split;
    for (int64_t w : widths) split.push_back(Poisoned({rows, w}));
    std::vector<Tensor*> outs;
    for (Tensor& t : split) outs.push_back(&t);
    st = SplitColumns(gpu(), out, widths, outs);
    ASSERT_TRUE(st.ok()) << what << ": " << st;
    for (size_t p = 0; p < parts.size(); ++p) {
      ExpectBitIdentical(ToHost(split[p]), parts[p],
                         "SplitColumns " + what + " part " + std::to_string(p));
    }
  }
};

TEST_F(CudaElementwiseTest, ActivationsMatchTheCpu) {
  const std::pair<const char*, UnaryFn> ops[] = {
      {"Relu", &Relu}, {"Sigmoid", &Sigmoid}, {"Tanh", &Tanh}};
  for (const Shape& shape : TestShapes()) {
    for (const auto& [name, op] : ops) {
      const std::string what = std::string(name) + " " + ShapeName(shape);
      // Wide enough to reach both saturated ends of sigmoid and tanh.
      Tensor x = RandomOfShape(shape, rng_, -12.0f, 12.0f);
      Tensor expected;
      ASSERT_TRUE(op(cpu(), x, &expected).ok()) << what;
      Tensor x_gpu = ToGpu(x);
      Tensor y = Poisoned(shape);
      Status st = op(gpu(), x_gpu, &y);
      ASSERT_TRUE(st.ok()) << what << ": " << st;
      ExpectMatchesCpu(ToHost(y), expected, kElementwiseRtol, what);

      // In place, y being x.
      st = op(gpu(), x_gpu, &x_gpu);
      ASSERT_TRUE(st.ok()) << what << ": " << st;
      ExpectMatchesCpu(ToHost(x_gpu), expected, kElementwiseRtol,
                       what + " in place");
    }
  }
}

TEST_F(CudaElementwiseTest, ActivationGradientsMatchTheCpu) {
  const std::tuple<const char*, UnaryFn, GradFn> ops[] = {
      {"ReluGrad", &Relu, &ReluGrad},
      {"SigmoidGrad", &Sigmoid, &SigmoidGrad},
      {"TanhGrad", &Tanh, &TanhGrad}};
  for (const Shape& shape : TestShapes()) {
    for (const auto& [name, forward, grad] : ops) {
      const std::string what = std::string(name) + " " + ShapeName(shape);
      // y as the forward pass gives it, so it lies in the output's range.
      Tensor y;
      ASSERT_TRUE(
          forward(cpu(), RandomOfShape(shape, rng_, -4.0f, 4.0f), &y).ok());
      Tensor dy = RandomOfShape(shape, rng_);
      Tensor expected;
      ASSERT_TRUE(grad(cpu(), y, dy, &expected).ok()) << what;
      Tensor y_gpu = ToGpu(y);
      Tensor dy_gpu = ToGpu(dy);
      Tensor dx = Poisoned(shape);
      Status st = grad(gpu(), y_gpu, dy_gpu, &dx);
      ASSERT_TRUE(st.ok()) << what << ": " << st;
      ExpectMatchesCpu(ToHost(dx), expected, kElementwiseRtol, what);

      // In place, dx being dy, then dx being y.
      Tensor dy_in_place = ToGpu(dy);
      ASSERT_TRUE(grad(gpu(), y_gpu, dy_in_place, &dy_in_place).ok());
      ExpectMatchesCpu(ToHost(dy_in_place), expected, kElementwiseRtol,
                       what + " into dy");
      ASSERT_TRUE(grad(gpu(), y_gpu, dy_gpu, &y_gpu).ok());
      ExpectMatchesCpu(ToHost(y_gpu), expected, kElementwiseRtol,
                       what + " into y");
    }
  }
}

TEST_F(CudaElementwiseTest, ActivationOutputMovesToTheDevice) {
  Tensor x = RandomTensor({6, 5}, rng_);
  Tensor y;  // a host tensor: the kernel places it on the device
  ASSERT_TRUE(Sigmoid(gpu(), ToGpu(x), &y).ok());
  EXPECT_EQ(y.device(), Device::kCuda);
  Tensor expected;
  ASSERT_TRUE(Sigmoid(cpu(), x, &expected).ok());
  ExpectMatchesCpu(ToHost(y), expected, kElementwiseRtol, "Sigmoid");
}

TEST_F(CudaElementwiseTest, DropoutMaskIsBitIdenticalToTheCpu) {
  for (const Shape& shape : TestShapes()) {
    for (float rate : {0.0f, 0.3f, 0.9f}) {
      for (uint64_t seed : {uint64_t{0}, uint64_t{12345}, ~uint64_t{0}}) {
        const std::string what = "Dropout " + ShapeName(shape) + " rate " +
                                 std::to_string(rate) + " seed " +
                                 std::to_string(seed);
        Tensor x = RandomOfShape(shape, rng_);
        Tensor y_cpu, mask_cpu;
        ASSERT_TRUE(Dropout(cpu(), x, rate, seed, &y_cpu, &mask_cpu).ok());
        Tensor x_gpu = ToGpu(x);
        Tensor y = Poisoned(shape), mask = Poisoned(shape);
        Status st = Dropout(gpu(), x_gpu, rate, seed, &y, &mask);
        ASSERT_TRUE(st.ok()) << what << ": " << st;
        ExpectBitIdentical(ToHost(mask), mask_cpu, what + " mask");
        ExpectBitIdentical(ToHost(y), y_cpu, what + " y");

        // In place, y being x.
        Tensor mask2 = Poisoned(shape);
        ASSERT_TRUE(Dropout(gpu(), x_gpu, rate, seed, &x_gpu, &mask2).ok());
        ExpectBitIdentical(ToHost(x_gpu), y_cpu, what + " in place");
        ExpectBitIdentical(ToHost(mask2), mask_cpu, what + " in-place mask");
      }
    }
  }
}

TEST_F(CudaElementwiseTest, DropoutGradMatchesTheCpu) {
  for (const Shape& shape : TestShapes()) {
    const std::string what = "DropoutGrad " + ShapeName(shape);
    Tensor y, mask;
    ASSERT_TRUE(
        Dropout(cpu(), RandomOfShape(shape, rng_), 0.4f, 7, &y, &mask).ok());
    Tensor dy = RandomOfShape(shape, rng_);
    Tensor expected;
    ASSERT_TRUE(DropoutGrad(cpu(), dy, mask, &expected).ok());
    Tensor dy_gpu = ToGpu(dy);
    Tensor mask_gpu = ToGpu(mask);
    Tensor dx = Poisoned(shape);
    Status st = DropoutGrad(gpu(), dy_gpu, mask_gpu, &dx);
    ASSERT_TRUE(st.ok()) << what << ": " << st;
    ExpectBitIdentical(ToHost(dx), expected, what);
    ASSERT_TRUE(DropoutGrad(gpu(), dy_gpu, mask_gpu, &dy_gpu).ok());
    ExpectBitIdentical(ToHost(dy_gpu), expected, what + " in place");
  }
}

TEST_F(CudaElementwiseTest, ConcatAndSplitColumnsMatchTheCpu) {
  ConcatAndSplit(37, {3, 0, 17, 1, 40});
  ConcatAndSplit(1, {5});
  ConcatAndSplit(0, {2, 3});
  ConcatAndSplit(4, {0, 0});
  ConcatAndSplit(2049, {300, 1, 77});
  // More non-empty parts than one launch takes (32), some empty between.
  std::vector<int64_t> many;
  std::uniform_int_distribution<int64_t> width(0, 6);
  for (int p = 0; p < 75; ++p) many.push_back(width(rng_));
  many[0] = 0;
  ConcatAndSplit(53, many);
  std::vector<int64_t> ones(64, 1);  // exactly two full launches
  ConcatAndSplit(9, ones);
}

TEST_F(CudaElementwiseTest, AddInPlaceMatchesTheCpu) {
  for (const Shape& shape : TestShapes()) {
    const std::string what = "AddInPlace " + ShapeName(shape);
    Tensor x = RandomOfShape(shape, rng_);
    Tensor y = RandomOfShape(shape, rng_);
    Tensor x_gpu = ToGpu(x);
    Tensor y_gpu = ToGpu(y);
    ASSERT_TRUE(AddInPlace(cpu(), x, &y).ok());
    Status st = AddInPlace(gpu(), x_gpu, &y_gpu);
    ASSERT_TRUE(st.ok()) << what << ": " << st;
    ExpectMatchesCpu(ToHost(y_gpu), y, kElementwiseRtol, what);
    // y being x doubles it.
    ASSERT_TRUE(AddInPlace(cpu(), x, &x).ok());
    ASSERT_TRUE(AddInPlace(gpu(), x_gpu, &x_gpu).ok());
    ExpectMatchesCpu(ToHost(x_gpu), x, kElementwiseRtol, what + " self");
  }
}

TEST_F(CudaElementwiseTest, NormalizeMatchesTheCpu) {
  const std::vector<Shape> shapes = {{1001, 7}, {513},  {50, 3000},
                                     {0, 4},    {5, 0}, {1, 1}};
  for (const Shape& shape : shapes) {
    const std::string what = "Normalize " + ShapeName(shape);
    const int64_t f = shape.size() == 1 ? 1 : shape[1];
    Tensor values = RandomOfShape(shape, rng_, -5.0f, 20.0f);
    Tensor mean_t = RandomTensor({f}, rng_, -3.0f, 10.0f);
    Tensor stddev_t = RandomTensor({f}, rng_, 0.1f, 4.0f);
    std::vector<float> mean(mean_t.data(), mean_t.data() + f);
    std::vector<float> stddev(stddev_t.data(), stddev_t.data() + f);
    if (f > 1) stddev[1] = 0.0f;  // divides by Keras' epsilon instead
    Tensor expected;
    ASSERT_TRUE(Normalize(cpu(), values, mean, stddev, &expected).ok());
    Tensor values_gpu = ToGpu(values);
    Tensor out = Poisoned(shape);
    {
      // The host arrays may go as soon as the call returns.
      std::vector<float> m = mean, s = stddev;
      Status st = Normalize(gpu(), values_gpu, m, s, &out);
      ASSERT_TRUE(st.ok()) << what << ": " << st;
      std::fill(m.begin(), m.end(), 1e30f);
      std::fill(s.begin(), s.end(), 1e30f);
    }
    ExpectMatchesCpu(ToHost(out), expected, kElementwiseRtol, what);
    ASSERT_TRUE(Normalize(gpu(), values_gpu, mean, stddev, &values_gpu).ok());
    ExpectMatchesCpu(ToHost(values_gpu), expected, kElementwiseRtol,
                     what + " in place");
  }
}

TEST_F(CudaElementwiseTest, NormalizerFitTakesHostValuesOnly) {
  Tensor values = RandomTensor({40, 3}, rng_, -5.0f, 20.0f);
  NormalizerFit on_gpu(3), on_cpu(3);
  Status st = on_gpu.Add(gpu(), ToGpu(values));
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_NE(st.message().find("host"), std::string_view::npos) << st;
  EXPECT_EQ(on_gpu.count(), 0);
  // Host values are fitted on the host, whatever the context.
  ASSERT_TRUE(on_gpu.Add(gpu(), values).ok());
  ASSERT_TRUE(on_cpu.Add(cpu(), values).ok());
  EXPECT_EQ(on_gpu.mean(), on_cpu.mean());
  EXPECT_EQ(on_gpu.stddev(), on_cpu.stddev());
}

TEST_F(CudaElementwiseTest, HostInputsAreRefused) {
  constexpr absl::StatusCode kInvalid = absl::StatusCode::kInvalidArgument;
  Tensor host = RandomTensor({4, 3}, rng_);
  Tensor device = ToGpu(host);
  Tensor out;
  EXPECT_EQ(Relu(gpu(), host, &out).code(), kInvalid);
  EXPECT_EQ(Tanh(gpu(), host, &out).code(), kInvalid);
  EXPECT_EQ(SigmoidGrad(gpu(), device, host, &out).code(), kInvalid);
  EXPECT_EQ(ReluGrad(gpu(), host, device, &out).code(), kInvalid);
  Tensor mask;
  EXPECT_EQ(Dropout(gpu(), host, 0.5f, 1, &out, &mask).code(), kInvalid);
  EXPECT_EQ(DropoutGrad(gpu(), device, host, &out).code(), kInvalid);
  const Tensor* parts[] = {&device, &host};
  EXPECT_EQ(ConcatColumns(gpu(), parts, &out).code(), kInvalid);
  const int64_t widths[] = {1, 2};
  Tensor a, b;
  Tensor* outs[] = {&a, &b};
  EXPECT_EQ(SplitColumns(gpu(), host, widths, outs).code(), kInvalid);
  Tensor y = ToGpu(host);
  EXPECT_EQ(AddInPlace(gpu(), host, &y).code(), kInvalid);
  Tensor host_y = host.Clone();
  EXPECT_EQ(AddInPlace(gpu(), device, &host_y).code(), kInvalid);
  const float stats[] = {0.0f, 1.0f, 2.0f};
  EXPECT_EQ(Normalize(gpu(), host, stats, stats, &out).code(), kInvalid);
}

}  // namespace
}  // namespace dtf::kernels
