// EmbeddingLookup and EmbeddingLookupGrad on CUDA against the CPU kernels.
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "lib/kernels/embedding.h"
#include "tests/kernels/cuda_test_util.h"

namespace dtf::kernels {
namespace {

using testing::CudaTest;
using testing::ExpectIdsEqual;
using testing::ExpectMatchesCpu;
using testing::RandomTensor;

const Combiner kCombiners[] = {Combiner::kSum, Combiner::kMean,
                               Combiner::kSqrtN};

SparseIds MakeIds(std::initializer_list<int64_t> ids,
                  std::initializer_list<int64_t> splits) {
  SparseIds s;
  s.ids = IdTensor::FromValues(ids);
  s.row_splits = IdTensor::FromValues(splits);
  return s;
}

// A ragged batch: rows of 0..max_len ids in [0, vocab), repeats included,
// about one id in eight -1 (out of vocabulary, skipped), every fifth row
// empty and, with two rows or more, a last row of -1s only (a row whose
// mean or sqrtn divisor is 0). Weights in [0.2, 2) when `weighted`.
SparseIds RandomIds(int64_t batch, int64_t vocab, int64_t max_len,
                    bool weighted, std::mt19937& rng) {
  std::uniform_int_distribution<int64_t> len(0, max_len);
  std::uniform_int_distribution<int64_t> id(0, vocab - 1);
  std::uniform_int_distribution<int> missing(0, 7);
  std::uniform_real_distribution<float> weight(0.2f, 2.0f);
  std::vector<int64_t> ids;
  std::vector<int64_t> splits{0};
  for (int64_t b = 0; b < batch; ++b) {
    int64_t n = b % 5 == 4 ? 0 : len(rng);
    if (batch > 1 && b == batch - 1) n = 2;
    for (int64_t j = 0; j < n; ++j) {
      const bool all_missing = batch > 1 && b == batch - 1;
      ids.push_back(all_missing || missing(rng) == 0 ? -1 : id(rng));
    }
    splits.push_back(static_cast<int64_t>(ids.size()));
  }
  SparseIds s;
  s.ids = IdTensor::FromValues(std::span<const int64_t>(ids));
  s.row_splits = IdTensor::FromValues(std::span<const int64_t>(splits));
  if (weighted) {
    s.weights = Tensor::Empty({static_cast<int64_t>(ids.size())});
    for (int64_t i = 0; i < s.weights.size(); ++i) s.weights[i] = weight(rng);
  }
  return s;
}

std::string Describe(int64_t batch, int64_t vocab, int64_t d, bool weighted,
                     Combiner c) {
  return "batch=" + std::to_string(batch) + " vocab=" + std::to_string(vocab) +
         " d=" + std::to_string(d) + " weighted=" + std::to_string(weighted) +
         " combiner=" + std::to_string(static_cast<int>(c));
}

class CudaEmbeddingTest : public CudaTest {
 protected:
  // The lookup and its gradient on both devices for one batch.
  void CompareWithCpu(int64_t batch, int64_t vocab, int64_t d, int64_t max_len,
                      bool weighted, Combiner c) {
    const std::string what = Describe(batch, vocab, d, weighted, c);
    SCOPED_TRACE(what);
    Tensor table = RandomTensor({vocab, d}, rng_);
    SparseIds ids = RandomIds(batch, vocab, max_len, weighted, rng_);
    const Tensor table_gpu = ToGpu(table);
    const SparseIds ids_gpu = ToGpu(ids);

    Tensor out_cpu;
    ASSERT_TRUE(EmbeddingLookup(cpu(), table, ids, c, &out_cpu).ok());
    Tensor out_gpu = Poisoned({batch, d});
    Status st = EmbeddingLookup(gpu(), table_gpu, ids_gpu, c, &out_gpu);
    ASSERT_TRUE(st.ok()) << st;
    EXPECT_EQ(out_gpu.device(), Device::kCuda);
    ExpectMatchesCpu(ToHost(out_gpu), out_cpu, testing::kReductionRtol,
                     "EmbeddingLookup " + what);

    Tensor dout = RandomTensor({batch, d}, rng_);
    SparseGrad grad_cpu;
    ASSERT_TRUE(
        EmbeddingLookupGrad(cpu(), ids, c, dout, vocab, &grad_cpu).ok());
    SparseGrad grad_gpu;
    grad_gpu.ids = PoisonedIds(grad_cpu.ids.size());
    grad_gpu.rows = Poisoned({grad_cpu.ids.size(), d});
    st = EmbeddingLookupGrad(gpu(), ids_gpu, c, ToGpu(dout), vocab, &grad_gpu);
    ASSERT_TRUE(st.ok()) << st;
    EXPECT_EQ(grad_gpu.ids.device(), Device::kCuda);
    EXPECT_EQ(grad_gpu.rows.device(), Device::kCuda);
    ExpectIdsEqual(ToHost(grad_gpu.ids), grad_cpu.ids,
                   "EmbeddingLookupGrad ids " + what);
    ExpectMatchesCpu(ToHost(grad_gpu.rows), grad_cpu.rows,
                     testing::kReductionRtol,
                     "EmbeddingLookupGrad rows " + what);
  }
};

TEST_F(CudaEmbeddingTest, LookupAndGradientMatchCpu) {
  // (batch, vocab, d, max_len): a single id; sizes that are no multiple of
  // 32 or 256; ids repeated hundreds of times in one batch; a vocabulary far
  // larger than the batch (more radix-sort bits, few repeats).
  for (auto [batch, vocab, d, max_len] :
       {std::tuple<int64_t, int64_t, int64_t, int64_t>{1, 1, 1, 1},
        {300, 1000, 77, 9},
        {1027, 50, 33, 20},
        {67, 200003, 16, 3}}) {
    for (bool weighted : {false, true}) {
      for (Combiner c : kCombiners) {
        CompareWithCpu(batch, vocab, d, max_len, weighted, c);
      }
    }
  }
}

TEST_F(CudaEmbeddingTest, EmptyBatchAndEmptyRowsGiveZerosAndNoIds) {
  Tensor table = RandomTensor({4, 3}, rng_);
  for (Combiner c : kCombiners) {
    // No rows at all.
    SparseIds none = MakeIds({}, {0});
    Tensor out = Poisoned({0, 3});
    ASSERT_TRUE(
        EmbeddingLookup(gpu(), ToGpu(table), ToGpu(none), c, &out).ok());
    EXPECT_EQ(out.shape(), (std::vector<int64_t>{0, 3}));
    SparseGrad grad;
    ASSERT_TRUE(EmbeddingLookupGrad(gpu(), ToGpu(none), c,
                                    ToGpu(Tensor::Empty({0, 3})), 4, &grad)
                    .ok());
    EXPECT_EQ(grad.ids.size(), 0);
    EXPECT_EQ(grad.rows.shape(), (std::vector<int64_t>{0, 3}));

    // Two empty rows and a row of skipped ids.
    SparseIds empty = MakeIds({-1, -1}, {0, 0, 0, 2});
    out = Poisoned({3, 3});
    ASSERT_TRUE(
        EmbeddingLookup(gpu(), ToGpu(table), ToGpu(empty), c, &out).ok());
    Tensor host = ToHost(out);
    for (int64_t i = 0; i < host.size(); ++i) EXPECT_EQ(host[i], 0.0f) << i;
    ASSERT_TRUE(EmbeddingLookupGrad(gpu(), ToGpu(empty), c,
                                    ToGpu(RandomTensor({3, 3}, rng_)), 4, &grad)
                    .ok());
    EXPECT_EQ(grad.ids.size(), 0);
    EXPECT_EQ(grad.rows.shape(), (std::vector<int64_t>{0, 3}));
  }
}

TEST_F(CudaEmbeddingTest, GradientIdsWithoutColumns) {
  // D = 0: no rows to sum, but the distinct ids are still the gradient's.
  SparseIds ids = RandomIds(40, 30, 6, false, rng_);
  Tensor dout = Tensor::Empty({40, 0});
  SparseGrad grad_cpu, grad_gpu;
  ASSERT_TRUE(
      EmbeddingLookupGrad(cpu(), ids, Combiner::kMean, dout, 30, &grad_cpu)
          .ok());
  ASSERT_TRUE(EmbeddingLookupGrad(gpu(), ToGpu(ids), Combiner::kMean,
                                  ToGpu(dout), 30, &grad_gpu)
                  .ok());
  ExpectIdsEqual(ToHost(grad_gpu.ids), grad_cpu.ids, "ids");
  EXPECT_EQ(grad_gpu.rows.shape(), grad_cpu.rows.shape());
}

TEST_F(CudaEmbeddingTest, GradientIsDeterministic) {
  const int64_t batch = 2000, vocab = 37, d = 40;
  SparseIds ids = ToGpu(RandomIds(batch, vocab, 12, true, rng_));
  Tensor dout = ToGpu(RandomTensor({batch, d}, rng_));
  SparseGrad first, second;
  ASSERT_TRUE(
      EmbeddingLookupGrad(gpu(), ids, Combiner::kSqrtN, dout, vocab, &first)
          .ok());
  ASSERT_TRUE(
      EmbeddingLookupGrad(gpu(), ids, Combiner::kSqrtN, dout, vocab, &second)
          .ok());
  Tensor a = ToHost(first.rows);
  Tensor b = ToHost(second.rows);
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << i;
}

TEST_F(CudaEmbeddingTest, OutputsMoveToTheDevice) {
  Tensor table = RandomTensor({10, 5}, rng_);
  SparseIds ids = MakeIds({3, 3, 7, 0}, {0, 2, 4});
  Tensor out;  // host tensors: placed on the device by the kernels
  ASSERT_TRUE(
      EmbeddingLookup(gpu(), ToGpu(table), ToGpu(ids), Combiner::kSum, &out)
          .ok());
  EXPECT_EQ(out.device(), Device::kCuda);
  Tensor expected;
  ASSERT_TRUE(
      EmbeddingLookup(cpu(), table, ids, Combiner::kSum, &expected).ok());
  ExpectMatchesCpu(ToHost(out), expected, testing::kReductionRtol, "lookup");

  Tensor dout = RandomTensor({2, 5}, rng_);
  SparseGrad grad, grad_cpu;
  ASSERT_TRUE(EmbeddingLookupGrad(gpu(), ToGpu(ids), Combiner::kSum,
                                  ToGpu(dout), 10, &grad)
                  .ok());
  EXPECT_EQ(grad.ids.device(), Device::kCuda);
  EXPECT_EQ(grad.rows.device(), Device::kCuda);
  ASSERT_TRUE(
      EmbeddingLookupGrad(cpu(), ids, Combiner::kSum, dout, 10, &grad_cpu)
          .ok());
  ExpectIdsEqual(ToHost(grad.ids), grad_cpu.ids, "ids");
  ExpectMatchesCpu(ToHost(grad.rows), grad_cpu.rows, testing::kReductionRtol,
                   "rows");
}

TEST_F(CudaEmbeddingTest, HostInputsAreRefused) {
  Tensor table = RandomTensor({4, 2}, rng_);
  SparseIds ids = MakeIds({1, 2}, {0, 1, 2});
  Tensor out;
  EXPECT_EQ(
      EmbeddingLookup(gpu(), table, ToGpu(ids), Combiner::kSum, &out).code(),
      StatusCode::kInvalidArgument);
  EXPECT_EQ(
      EmbeddingLookup(gpu(), ToGpu(table), ids, Combiner::kSum, &out).code(),
      StatusCode::kInvalidArgument);
  SparseGrad grad;
  EXPECT_EQ(EmbeddingLookupGrad(gpu(), ids, Combiner::kSum,
                                ToGpu(RandomTensor({2, 2}, rng_)), 4, &grad)
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(EmbeddingLookupGrad(gpu(), ToGpu(ids), Combiner::kSum,
                                RandomTensor({2, 2}, rng_), 4, &grad)
                .code(),
            StatusCode::kInvalidArgument);
  // Device ids with host row splits.
  SparseIds mixed = ToGpu(ids);
  mixed.row_splits = IdTensor::FromValues({0, 1, 2});
  EXPECT_EQ(
      EmbeddingLookup(gpu(), ToGpu(table), mixed, Combiner::kSum, &out).code(),
      StatusCode::kInvalidArgument);
}

TEST_F(CudaEmbeddingTest, BadIdsAndSplitsGiveTheCpuErrors) {
  Tensor table = RandomTensor({4, 2}, rng_);
  const SparseIds cases[] = {
      MakeIds({1, 4}, {0, 1, 2}),               // id 4 past the table
      MakeIds({-1, 0, 3, 9, 7}, {0, 2, 2, 5}),  // first bad id in row 2
      MakeIds({1, 2}, {0, 3}),                  // splits end past the ids
      MakeIds({1, 2}, {1, 2}),                  // splits start at 1
      MakeIds({1, 2, 3}, {0, 2, 1, 3}),         // splits decrease
      MakeIds({1, 2}, {}),                      // no splits at all
  };
  for (const SparseIds& ids : cases) {
    Tensor out_cpu, out_gpu;
    const Status want =
        EmbeddingLookup(cpu(), table, ids, Combiner::kMean, &out_cpu);
    ASSERT_EQ(want.code(), StatusCode::kInvalidArgument);
    const Status got = EmbeddingLookup(gpu(), ToGpu(table), ToGpu(ids),
                                       Combiner::kMean, &out_gpu);
    EXPECT_EQ(got.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(Message(got), Message(want));

    const int64_t batch = ids.batch_size();
    Tensor dout = RandomTensor({batch, 2}, rng_);
    SparseGrad grad_cpu, grad_gpu;
    const Status want_grad =
        EmbeddingLookupGrad(cpu(), ids, Combiner::kSum, dout, 4, &grad_cpu);
    const Status got_grad = EmbeddingLookupGrad(
        gpu(), ToGpu(ids), Combiner::kSum, ToGpu(dout), 4, &grad_gpu);
    EXPECT_EQ(got_grad.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(Message(got_grad), Message(want_grad));
  }
  // Weights that do not match the ids.
  SparseIds weighted = MakeIds({1, 2}, {0, 2});
  weighted.weights = Tensor::FromValues({3}, {1, 2, 3});
  Tensor out_cpu, out_gpu;
  const Status want =
      EmbeddingLookup(cpu(), table, weighted, Combiner::kSum, &out_cpu);
  const Status got = EmbeddingLookup(gpu(), ToGpu(table), ToGpu(weighted),
                                     Combiner::kSum, &out_gpu);
  EXPECT_EQ(got.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(got), Message(want));
}

}  // namespace
}  // namespace dtf::kernels
