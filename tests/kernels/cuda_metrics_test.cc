// The metrics' updates on CUDA (per-batch sums on the device, RocAuc through
// the host) against the same metrics updated on the CPU.
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "lib/kernels/metrics.h"
#include "tests/kernels/cuda_test_util.h"

namespace dtf::kernels {
namespace {

using testing::CudaTest;
using testing::RandomTensor;

// Batch sizes: one example; sizes that are no multiple of 32 or 256; more
// examples than the grid has threads (4096 blocks of 256).
const int64_t kBatchSizes[] = {1, 257, 5003, 1100000};

// Sums in double added in another order: equal to about 1e-15.
constexpr double kDoubleRtol = 1e-12;

// Probabilities in (0, 1), with 0, 1 (clipped by LogLoss) and 0.5 (not
// above BinaryAccuracy's threshold) among them once n > 3.
Tensor RandomProbabilities(int64_t n, std::mt19937& rng) {
  Tensor p = RandomTensor({n}, rng, 0.0f, 1.0f);
  if (n > 3) {
    p[0] = 0.0f;
    p[1] = 1.0f;
    p[2] = 0.5f;
  }
  return p;
}

Tensor RandomBinaryLabels(int64_t n, std::mt19937& rng) {
  std::bernoulli_distribution positive(0.4);
  Tensor y = Tensor::Empty({n});
  for (int64_t i = 0; i < n; ++i) y[i] = positive(rng) ? 1.0f : 0.0f;
  return y;
}

void ExpectRelativelyNear(double got, double want, const char* what) {
  EXPECT_NEAR(got, want, kDoubleRtol * std::fabs(want)) << what;
}

class CudaMetricsTest : public CudaTest {};

TEST_F(CudaMetricsTest, BinaryAccuracyMatchesCpu) {
  BinaryAccuracy on_cpu, on_gpu;
  for (int64_t n : kBatchSizes) {
    Tensor p = RandomProbabilities(n, rng_);
    Tensor y = RandomBinaryLabels(n, rng_);
    ASSERT_TRUE(on_cpu.Update(cpu(), p, y).ok());
    Status st = on_gpu.Update(gpu(), ToGpu(p), ToGpu(y));
    ASSERT_TRUE(st.ok()) << st;
    EXPECT_EQ(on_gpu.count(), on_cpu.count()) << n;
    EXPECT_EQ(on_gpu.Result(), on_cpu.Result()) << n;
  }
}

TEST_F(CudaMetricsTest, LogLossMatchesCpu) {
  LogLoss on_cpu, on_gpu;
  for (int64_t n : kBatchSizes) {
    Tensor p = RandomProbabilities(n, rng_);
    Tensor y = RandomTensor({n}, rng_, 0.0f, 1.0f);  // soft labels too
    ASSERT_TRUE(on_cpu.Update(cpu(), p, y).ok());
    Status st = on_gpu.Update(gpu(), ToGpu(p), ToGpu(y));
    ASSERT_TRUE(st.ok()) << st;
    EXPECT_EQ(on_gpu.count(), on_cpu.count()) << n;
    ExpectRelativelyNear(on_gpu.Result(), on_cpu.Result(), "LogLoss");
  }
}

TEST_F(CudaMetricsTest, SquaredErrorMatchesCpu) {
  SquaredError on_cpu, on_gpu;
  for (int64_t n : kBatchSizes) {
    Tensor p = RandomTensor({n}, rng_, -3.0f, 3.0f);
    Tensor t = RandomTensor({n}, rng_, -3.0f, 3.0f);
    ASSERT_TRUE(on_cpu.Update(cpu(), p, t).ok());
    Status st = on_gpu.Update(gpu(), ToGpu(p), ToGpu(t));
    ASSERT_TRUE(st.ok()) << st;
    EXPECT_EQ(on_gpu.count(), on_cpu.count()) << n;
    ExpectRelativelyNear(on_gpu.MeanSquaredError(), on_cpu.MeanSquaredError(),
                         "MeanSquaredError");
    ExpectRelativelyNear(on_gpu.RootMeanSquaredError(),
                         on_cpu.RootMeanSquaredError(), "RootMeanSquaredError");
  }
}

TEST_F(CudaMetricsTest, MulticlassAccuracyMatchesCpuWithTies) {
  MulticlassAccuracy on_cpu, on_gpu;
  // (batch, classes); scores are small integers, so rows often tie and the
  // lowest tied class must win, as on the CPU.
  for (auto [batch, classes] :
       {std::pair<int64_t, int64_t>{1, 1}, {300, 7}, {5003, 3}, {20000, 10}}) {
    std::uniform_int_distribution<int> level(0, 2);
    Tensor scores = Tensor::Empty({batch, classes});
    for (int64_t i = 0; i < scores.size(); ++i) {
      scores[i] = static_cast<float>(level(rng_));
    }
    std::uniform_int_distribution<int64_t> label(0, classes - 1);
    IdTensor labels = IdTensor::Empty(batch);
    for (int64_t b = 0; b < batch; ++b) labels[b] = label(rng_);
    ASSERT_TRUE(on_cpu.Update(cpu(), scores, labels).ok());
    Status st = on_gpu.Update(gpu(), ToGpu(scores), ToGpu(labels));
    ASSERT_TRUE(st.ok()) << st;
    EXPECT_EQ(on_gpu.count(), on_cpu.count()) << batch;
    EXPECT_EQ(on_gpu.Result(), on_cpu.Result()) << batch;
  }
}

TEST_F(CudaMetricsTest, MulticlassAccuracyChecksLabelsOnTheDevice) {
  Tensor scores = RandomTensor({5, 3}, rng_);
  for (const std::vector<int64_t>& values :
       {std::vector<int64_t>{0, 1, 3, 2, -1},
        std::vector<int64_t>{0, 1, 2, 2, -4},
        std::vector<int64_t>{9, 1, 2, 2, 0}}) {
    const IdTensor labels =
        IdTensor::FromValues(std::span<const int64_t>(values));
    MulticlassAccuracy on_cpu, on_gpu;
    const Status want = on_cpu.Update(cpu(), scores, labels);
    ASSERT_EQ(want.code(), StatusCode::kInvalidArgument);
    const Status got = on_gpu.Update(gpu(), ToGpu(scores), ToGpu(labels));
    EXPECT_EQ(got.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(Message(got), Message(want));
    EXPECT_EQ(on_gpu.count(), 0);
  }
}

TEST_F(CudaMetricsTest, RocAucMatchesCpu) {
  RocAuc on_cpu, on_gpu;
  for (int64_t n : {int64_t{1}, int64_t{257}, int64_t{5003}}) {
    // Scores on a coarse grid, so positives and negatives tie.
    std::uniform_int_distribution<int> level(0, 50);
    Tensor s = Tensor::Empty({n});
    for (int64_t i = 0; i < n; ++i) s[i] = static_cast<float>(level(rng_));
    Tensor y = RandomBinaryLabels(n, rng_);
    ASSERT_TRUE(on_cpu.Update(cpu(), s, y).ok());
    Status st = on_gpu.Update(gpu(), ToGpu(s), ToGpu(y));
    ASSERT_TRUE(st.ok()) << st;
    EXPECT_EQ(on_gpu.count(), on_cpu.count());
  }
  EXPECT_EQ(on_gpu.Result(), on_cpu.Result());

  Tensor nan_scores = Tensor::FromValues({3}, {0.5f, 0.25f, 0.75f});
  nan_scores[1] = std::numeric_limits<float>::quiet_NaN();
  Tensor y = Tensor::FromValues({3}, {1, 0, 1});
  const Status want = on_cpu.Update(cpu(), nan_scores, y);
  const Status got = on_gpu.Update(gpu(), ToGpu(nan_scores), ToGpu(y));
  EXPECT_EQ(got.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(got), Message(want));
  EXPECT_EQ(on_gpu.count(), on_cpu.count());
}

// Precision, recall and average precision go through the host: the same
// counts, and the same result, as on the CPU.
TEST_F(CudaMetricsTest, PrecisionRecallAndAveragePrecisionMatchCpu) {
  BinaryPrecisionRecall pr_cpu, pr_gpu;
  AveragePrecision ap_cpu, ap_gpu;
  for (int64_t n : {int64_t{1}, int64_t{257}, int64_t{5003}}) {
    Tensor p = RandomProbabilities(n, rng_);
    Tensor y = RandomBinaryLabels(n, rng_);
    ASSERT_TRUE(pr_cpu.Update(cpu(), p, y).ok());
    ASSERT_TRUE(ap_cpu.Update(cpu(), p, y).ok());
    Status st = pr_gpu.Update(gpu(), ToGpu(p), ToGpu(y));
    ASSERT_TRUE(st.ok()) << st;
    st = ap_gpu.Update(gpu(), ToGpu(p), ToGpu(y));
    ASSERT_TRUE(st.ok()) << st;
  }
  EXPECT_EQ(pr_gpu.count(), pr_cpu.count());
  EXPECT_EQ(pr_gpu.Precision(), pr_cpu.Precision());
  EXPECT_EQ(pr_gpu.Recall(), pr_cpu.Recall());
  EXPECT_EQ(pr_gpu.PositiveRate(), pr_cpu.PositiveRate());
  EXPECT_EQ(ap_gpu.count(), ap_cpu.count());
  EXPECT_EQ(ap_gpu.Result(), ap_cpu.Result());
}

TEST_F(CudaMetricsTest, EmptyBatchesCountNothing) {
  Tensor empty = Tensor::Empty({0});
  BinaryAccuracy accuracy;
  LogLoss log_loss;
  SquaredError squared;
  RocAuc auc;
  ASSERT_TRUE(accuracy.Update(gpu(), ToGpu(empty), ToGpu(empty)).ok());
  ASSERT_TRUE(log_loss.Update(gpu(), ToGpu(empty), ToGpu(empty)).ok());
  ASSERT_TRUE(squared.Update(gpu(), ToGpu(empty), ToGpu(empty)).ok());
  ASSERT_TRUE(auc.Update(gpu(), ToGpu(empty), ToGpu(empty)).ok());
  MulticlassAccuracy multiclass;
  ASSERT_TRUE(
      multiclass.Update(gpu(), ToGpu(Tensor::Empty({0, 4})), ToGpu(IdTensor()))
          .ok());
  EXPECT_EQ(accuracy.count(), 0);
  EXPECT_EQ(log_loss.count(), 0);
  EXPECT_EQ(squared.count(), 0);
  EXPECT_EQ(auc.count(), 0);
  EXPECT_EQ(multiclass.count(), 0);
  EXPECT_TRUE(std::isnan(accuracy.Result()));
}

TEST_F(CudaMetricsTest, HostInputsAreRefusedAndCountNothing) {
  Tensor p = RandomProbabilities(8, rng_);
  Tensor y = RandomBinaryLabels(8, rng_);
  BinaryAccuracy accuracy;
  EXPECT_EQ(accuracy.Update(gpu(), p, ToGpu(y)).code(),
            StatusCode::kInvalidArgument);
  LogLoss log_loss;
  EXPECT_EQ(log_loss.Update(gpu(), ToGpu(p), y).code(),
            StatusCode::kInvalidArgument);
  SquaredError squared;
  EXPECT_EQ(squared.Update(gpu(), p, y).code(), StatusCode::kInvalidArgument);
  RocAuc auc;
  EXPECT_EQ(auc.Update(gpu(), p, ToGpu(y)).code(),
            StatusCode::kInvalidArgument);
  MulticlassAccuracy multiclass;
  EXPECT_EQ(multiclass
                .Update(gpu(), RandomTensor({2, 3}, rng_),
                        ToGpu(IdTensor::FromValues({0, 2})))
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(multiclass
                .Update(gpu(), ToGpu(RandomTensor({2, 3}, rng_)),
                        IdTensor::FromValues({0, 2}))
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(accuracy.count() + log_loss.count() + squared.count() +
                auc.count() + multiclass.count(),
            0);
}

}  // namespace
}  // namespace dtf::kernels
