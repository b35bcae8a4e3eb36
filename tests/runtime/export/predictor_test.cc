#include "lib/runtime/export/predictor.h"

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "lib/runtime/train/job_records.h"
#include "lib/runtime/train/trainer.h"
#include "tests/runtime/runtime_testing.h"

namespace dtf::runtime {
namespace {

// The Titanic job trained for a few steps, its model exported.
class PredictorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StatusOr<std::string> path = testing::WriteExampleJob("titanic", dir_);
    ASSERT_TRUE(path.ok()) << path.status();
    StatusOr<JobFile> job = testing::LoadJobWithRecords(*path);
    ASSERT_TRUE(job.ok()) << job.status();
    TrainOptions options;
    options.steps = 20;
    options.threads = 1;
    StatusOr<TrainResult> trained = Train(*job, options);
    ASSERT_TRUE(trained.ok()) << trained.status();
    model_dir_ = trained->export_dir;
    StatusOr<JobRecords> records = FindJobRecords(*job);
    ASSERT_TRUE(records.ok()) << records.status();
    files_ = records->train;
  }

  InputPipelineOptions Options(const Predictor& p, int64_t batch) const {
    InputPipelineOptions options;
    options.files = files_;
    options.features = p.ParseSpecs();
    options.batch_size = batch;
    return options;
  }

  // Every record's logits, as bits, scored in batches of `batch`.
  std::vector<uint32_t> Scores(int64_t batch) {
    StatusOr<Predictor> p = Predictor::Load(model_dir_, 1);
    EXPECT_TRUE(p.ok()) << p.status();
    std::vector<uint32_t> bits;
    if (!p.ok()) return bits;
    const int64_t k = p->outputs();
    const Status s = p->Run(
        Options(*p, batch), nullptr,
        [&](const Batch& b, int64_t rows, const kernels::Tensor& logits) {
          EXPECT_EQ(b.rows % kPredictRowPadding, 0);
          EXPECT_GE(logits.dim(0), rows);
          for (int64_t i = 0; i < rows * k; ++i) {
            uint32_t v = 0;
            std::memcpy(&v, logits.data() + i, sizeof(v));
            bits.push_back(v);
          }
          return OkStatus();
        });
    EXPECT_TRUE(s.ok()) << s;
    return bits;
  }

  dtf::testing::TempDir dir_;
  std::string model_dir_;
  std::vector<std::string> files_;
};

// A record scores to the same bits wherever its batch ends.
TEST_F(PredictorTest, ScoresDoNotDependOnTheBatch) {
  const std::vector<uint32_t> whole = Scores(1024);
  ASSERT_GT(whole.size(), 500u);
  for (int64_t batch : {1, 7, 100}) {
    EXPECT_EQ(Scores(batch), whole) << "batch " << batch;
  }
}

// Padding appends copies of the last row: the rows before keep their
// values and the added ones repeat the last.
TEST_F(PredictorTest, PaddingRepeatsTheLastRow) {
  StatusOr<Predictor> p = Predictor::Load(model_dir_, 1);
  ASSERT_TRUE(p.ok()) << p.status();
  StatusOr<std::unique_ptr<InputPipeline>> pipeline =
      InputPipeline::Create(Options(*p, 3));
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  Batch batch;
  ASSERT_TRUE(*(*pipeline)->Next(&batch));
  ASSERT_EQ(batch.rows, 3);
  const Batch before = batch;
  PadBatchRows(&batch, kPredictRowPadding);
  ASSERT_EQ(batch.rows, kPredictRowPadding);
  for (size_t c = 0; c < batch.columns.size(); ++c) {
    const Column& was = before.columns[c];
    const Column& now = batch.columns[c];
    for (int64_t r = 0; r < batch.rows; ++r) {
      const int64_t from = std::min<int64_t>(r, 2);
      ASSERT_EQ(now.row_size(r), was.row_size(from)) << c << " row " << r;
      for (int64_t i = 0; i < now.row_size(r); ++i) {
        const int64_t a = now.row_begin(r) + i;
        const int64_t b = was.row_begin(from) + i;
        switch (now.type) {
          case FeatureType::kInt64:
            EXPECT_EQ(now.int64s[size_t(a)], was.int64s[size_t(b)]);
            break;
          case FeatureType::kFloat:
            EXPECT_EQ(now.floats[size_t(a)], was.floats[size_t(b)]);
            break;
          case FeatureType::kBytes:
            EXPECT_EQ(now.bytes_value(a), was.bytes_value(b));
            break;
        }
      }
    }
  }
}

TEST_F(PredictorTest, ACancelOrAnErrorOfTheCallerStopsTheRun) {
  StatusOr<Predictor> p = Predictor::Load(model_dir_, 1);
  ASSERT_TRUE(p.ok()) << p.status();
  int calls = 0;
  const std::atomic<bool> cancel{true};
  Status s = p->Run(Options(*p, 16), &cancel,
                    [&](const Batch&, int64_t, const kernels::Tensor&) {
                      ++calls;
                      return OkStatus();
                    });
  EXPECT_EQ(s.code(), StatusCode::kCancelled) << s;
  EXPECT_EQ(calls, 0);
  s = p->Run(Options(*p, 16), nullptr,
             [&](const Batch&, int64_t, const kernels::Tensor&) {
               ++calls;
               return ResourceExhaustedError("disk full");
             });
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s;
  EXPECT_EQ(calls, 1);
}

TEST(Predictor, AMissingModelIsAnErrorNamingIt) {
  StatusOr<Predictor> p = Predictor::Load("/nonexistent/model", 1);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(Message(p.status()).find("/nonexistent/model"), std::string::npos)
      << p.status();
}

}  // namespace
}  // namespace dtf::runtime
