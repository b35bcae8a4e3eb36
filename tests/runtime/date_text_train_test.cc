// Training with the date and text feature kinds: each job's label is told
// only by its date (or text) column, so the accuracy shows the kind's
// inputs reach the model.
#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "lib/runtime/checkpoint/bundle.h"
#include "lib/runtime/export/exported_model.h"
#include "lib/runtime/train/evaluator.h"
#include "lib/runtime/train/job_records.h"
#include "lib/runtime/train/trainer.h"
#include "tests/runtime/date_text_jobs.h"
#include "tests/runtime/runtime_testing.h"

namespace dtf::runtime {
namespace {

using testing::LoadJobWithRecords;

TEST(DateTextTraining, ATextColumnCarryingTheLabelIsLearned) {
  dtf::testing::TempDir dir;
  StatusOr<JobFile> job =
      LoadJobWithRecords(testing::WriteReviewJob(dir, 3000));
  ASSERT_TRUE(job.ok()) << job.status();
  StatusOr<TrainResult> r = Train(*job, {});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->eval.has_value());
  EXPECT_GE(*r->eval->metrics.Get("accuracy"), 0.95);

  // The exported model (model.toml read back) scores the evaluation split
  // as the trainer did.
  StatusOr<LoadedModel> loaded = LoadExportedModel(r->export_dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_EQ(loaded->definition.features.text.size(), 1u);
  StatusOr<JobRecords> records = FindJobRecords(*job);
  ASSERT_TRUE(records.ok());
  StatusOr<EvalMetrics> again =
      Evaluate(kernels::Context::Cpu(0), loaded->layer, *loaded->model,
               records->eval, 256);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_DOUBLE_EQ(*again->Get("accuracy"), *r->eval->metrics.Get("accuracy"));
}

TEST(DateTextTraining, ALinearBagOfWordsLearnsTheText) {
  dtf::testing::TempDir dir;
  StatusOr<JobFile> job =
      LoadJobWithRecords(testing::WriteReviewJob(dir, 3000, /*linear=*/true));
  ASSERT_TRUE(job.ok()) << job.status();
  StatusOr<TrainResult> r = Train(*job, {});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->eval.has_value());
  EXPECT_GE(*r->eval->metrics.Get("accuracy"), 0.95);
}

TEST(DateTextTraining, AWeekdayAndMonthEffectIsLearned) {
  dtf::testing::TempDir dir;
  StatusOr<JobFile> job = LoadJobWithRecords(testing::WriteDateJob(dir, 3000));
  ASSERT_TRUE(job.ok()) << job.status();
  StatusOr<TrainResult> r = Train(*job, {});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->eval.has_value());
  // About 46% of the days are weekends or summer days.
  EXPECT_GE(*r->eval->metrics.Get("accuracy"), 0.95);
  StatusOr<LoadedModel> loaded = LoadExportedModel(r->export_dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->layer.normalized_width(), 2);  // year, epoch_days
  // The training data's statistics, restored: years 2020 to 2023.
  EXPECT_NEAR(loaded->layer.normalizer().mean[0], 2021.5, 0.2);
  EXPECT_NEAR(loaded->layer.normalizer().stddev[0], 1.12, 0.1);
}

}  // namespace
}  // namespace dtf::runtime
