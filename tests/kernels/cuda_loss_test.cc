// SigmoidCrossEntropy, SoftmaxCrossEntropy and MeanSquaredError on CUDA
// against the CPU kernels.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "lib/kernels/loss.h"
#include "tests/kernels/cuda_test_util.h"

namespace dtf::kernels {
namespace {

using testing::CudaTest;
using testing::ExpectMatchesCpu;
using testing::RandomTensor;

// (rows, cols) of the inputs: one element; sizes that are no multiple of 32
// or 256; more elements than the grid has threads (4096 blocks of 256), so
// threads loop.
const std::pair<int64_t, int64_t> kShapes[] = {
    {1, 1}, {37, 29}, {1, 5003}, {300, 257}, {1100, 1000}};

void ExpectLossNear(const StatusOr<float>& gpu, const StatusOr<float>& cpu,
                    const std::string& what) {
  ASSERT_TRUE(cpu.ok()) << what << ": " << cpu.status();
  ASSERT_TRUE(gpu.ok()) << what << ": " << gpu.status();
  EXPECT_NEAR(*gpu, *cpu,
              testing::kReductionRtol * std::max(1.0f, std::fabs(*cpu)))
      << what;
}

std::string Shape(int64_t rows, int64_t cols) {
  return "[" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
}

// Labels in [0, classes).
IdTensor RandomLabels(int64_t n, int64_t classes, std::mt19937& rng) {
  std::uniform_int_distribution<int64_t> label(0, classes - 1);
  IdTensor labels = IdTensor::Empty(n);
  for (int64_t i = 0; i < n; ++i) labels[i] = label(rng);
  return labels;
}

class CudaLossTest : public CudaTest {};

TEST_F(CudaLossTest, SigmoidCrossEntropyMatchesCpu) {
  for (auto [rows, cols] : kShapes) {
    const std::string what = "SigmoidCrossEntropy " + Shape(rows, cols);
    Tensor logits = RandomTensor({rows, cols}, rng_, -8.0f, 8.0f);
    Tensor labels = RandomTensor({rows, cols}, rng_, 0.0f, 1.0f);
    Tensor d_cpu;
    const StatusOr<float> loss_cpu =
        SigmoidCrossEntropy(cpu(), logits, labels, &d_cpu);
    const Tensor logits_gpu = ToGpu(logits);
    const Tensor labels_gpu = ToGpu(labels);
    Tensor d_gpu = Poisoned({rows, cols});
    const StatusOr<float> loss_gpu =
        SigmoidCrossEntropy(gpu(), logits_gpu, labels_gpu, &d_gpu);
    ExpectLossNear(loss_gpu, loss_cpu, what);
    ExpectMatchesCpu(ToHost(d_gpu), d_cpu, testing::kElementwiseRtol, what);

    // Without the gradient: the same sum, to the bit.
    const StatusOr<float> again =
        SigmoidCrossEntropy(gpu(), logits_gpu, labels_gpu, nullptr);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(*again, *loss_gpu) << what;
  }
}

TEST_F(CudaLossTest, SoftmaxCrossEntropyMatchesCpu) {
  // (batch, classes): one class; a few classes; many classes per row.
  for (auto [batch, classes] : {std::pair<int64_t, int64_t>{1, 1},
                                {300, 10},
                                {1000, 37},
                                {7, 1000},
                                {5000, 3}}) {
    const std::string what = "SoftmaxCrossEntropy " + Shape(batch, classes);
    Tensor logits = RandomTensor({batch, classes}, rng_, -8.0f, 8.0f);
    IdTensor labels = RandomLabels(batch, classes, rng_);
    Tensor d_cpu;
    const StatusOr<float> loss_cpu =
        SoftmaxCrossEntropy(cpu(), logits, labels, &d_cpu);
    const Tensor logits_gpu = ToGpu(logits);
    const IdTensor labels_gpu = ToGpu(labels);
    Tensor d_gpu = Poisoned({batch, classes});
    const StatusOr<float> loss_gpu =
        SoftmaxCrossEntropy(gpu(), logits_gpu, labels_gpu, &d_gpu);
    ExpectLossNear(loss_gpu, loss_cpu, what);
    ExpectMatchesCpu(ToHost(d_gpu), d_cpu, testing::kElementwiseRtol, what);

    const StatusOr<float> again =
        SoftmaxCrossEntropy(gpu(), logits_gpu, labels_gpu, nullptr);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(*again, *loss_gpu) << what;
  }
}

TEST_F(CudaLossTest, SoftmaxCrossEntropyChecksLabelsOnTheDevice) {
  Tensor logits = RandomTensor({6, 4}, rng_);
  // The first bad label past the end, before the end, and last.
  for (const std::vector<int64_t>& values :
       {std::vector<int64_t>{0, 1, 2, 4, 3, -1},
        std::vector<int64_t>{0, -2, 2, 3, 7, 1},
        std::vector<int64_t>{0, 1, 2, 3, 0, 4}}) {
    const IdTensor labels =
        IdTensor::FromValues(std::span<const int64_t>(values));
    Tensor d_cpu, d_gpu;
    const StatusOr<float> want =
        SoftmaxCrossEntropy(cpu(), logits, labels, &d_cpu);
    ASSERT_EQ(want.status().code(), StatusCode::kInvalidArgument);
    const StatusOr<float> got =
        SoftmaxCrossEntropy(gpu(), ToGpu(logits), ToGpu(labels), &d_gpu);
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(Message(got.status()), Message(want.status()));
  }
}

TEST_F(CudaLossTest, MeanSquaredErrorMatchesCpu) {
  for (auto [rows, cols] : kShapes) {
    const std::string what = "MeanSquaredError " + Shape(rows, cols);
    Tensor p = RandomTensor({rows, cols}, rng_, -3.0f, 3.0f);
    Tensor t = RandomTensor({rows, cols}, rng_, -3.0f, 3.0f);
    Tensor d_cpu;
    const StatusOr<float> loss_cpu = MeanSquaredError(cpu(), p, t, &d_cpu);
    const Tensor p_gpu = ToGpu(p);
    const Tensor t_gpu = ToGpu(t);
    Tensor d_gpu = Poisoned({rows, cols});
    const StatusOr<float> loss_gpu =
        MeanSquaredError(gpu(), p_gpu, t_gpu, &d_gpu);
    ExpectLossNear(loss_gpu, loss_cpu, what);
    ExpectMatchesCpu(ToHost(d_gpu), d_cpu, testing::kElementwiseRtol, what);

    const StatusOr<float> again =
        MeanSquaredError(gpu(), p_gpu, t_gpu, nullptr);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(*again, *loss_gpu) << what;
  }
}

TEST_F(CudaLossTest, EmptyInputsGiveZero) {
  Tensor empty = Tensor::Empty({0, 5});
  Tensor d;
  StatusOr<float> loss =
      SigmoidCrossEntropy(gpu(), ToGpu(empty), ToGpu(empty), &d);
  ASSERT_TRUE(loss.ok()) << loss.status();
  EXPECT_EQ(*loss, 0.0f);
  loss = MeanSquaredError(gpu(), ToGpu(empty), ToGpu(empty), &d);
  ASSERT_TRUE(loss.ok()) << loss.status();
  EXPECT_EQ(*loss, 0.0f);
  loss = SoftmaxCrossEntropy(gpu(), ToGpu(empty), ToGpu(IdTensor()), &d);
  ASSERT_TRUE(loss.ok()) << loss.status();
  EXPECT_EQ(*loss, 0.0f);
}

TEST_F(CudaLossTest, GradientsMoveToTheDevice) {
  Tensor x = RandomTensor({9, 5}, rng_);
  Tensor z = RandomTensor({9, 5}, rng_, 0.0f, 1.0f);
  Tensor d_cpu, d_gpu;  // host tensors: placed on the device by the kernel
  ASSERT_TRUE(SigmoidCrossEntropy(cpu(), x, z, &d_cpu).ok());
  ASSERT_TRUE(SigmoidCrossEntropy(gpu(), ToGpu(x), ToGpu(z), &d_gpu).ok());
  EXPECT_EQ(d_gpu.device(), Device::kCuda);
  ExpectMatchesCpu(ToHost(d_gpu), d_cpu, testing::kElementwiseRtol, "sigmoid");

  IdTensor labels = RandomLabels(9, 5, rng_);
  Tensor s_cpu, s_gpu;
  ASSERT_TRUE(SoftmaxCrossEntropy(cpu(), x, labels, &s_cpu).ok());
  ASSERT_TRUE(SoftmaxCrossEntropy(gpu(), ToGpu(x), ToGpu(labels), &s_gpu).ok());
  EXPECT_EQ(s_gpu.device(), Device::kCuda);
  ExpectMatchesCpu(ToHost(s_gpu), s_cpu, testing::kElementwiseRtol, "softmax");

  Tensor m_cpu, m_gpu;
  ASSERT_TRUE(MeanSquaredError(cpu(), x, z, &m_cpu).ok());
  ASSERT_TRUE(MeanSquaredError(gpu(), ToGpu(x), ToGpu(z), &m_gpu).ok());
  EXPECT_EQ(m_gpu.device(), Device::kCuda);
  ExpectMatchesCpu(ToHost(m_gpu), m_cpu, testing::kElementwiseRtol, "mse");
}

TEST_F(CudaLossTest, HostInputsAreRefused) {
  Tensor x = RandomTensor({3, 4}, rng_);
  Tensor z = RandomTensor({3, 4}, rng_, 0.0f, 1.0f);
  IdTensor labels = IdTensor::FromValues({0, 3, 1});
  Tensor d;
  EXPECT_EQ(SigmoidCrossEntropy(gpu(), x, ToGpu(z), &d).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(SigmoidCrossEntropy(gpu(), ToGpu(x), z, &d).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(SoftmaxCrossEntropy(gpu(), x, ToGpu(labels), &d).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(SoftmaxCrossEntropy(gpu(), ToGpu(x), labels, &d).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(MeanSquaredError(gpu(), x, ToGpu(z), &d).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(MeanSquaredError(gpu(), ToGpu(x), z, nullptr).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dtf::kernels
