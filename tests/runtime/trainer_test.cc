#include "lib/runtime/trainer.h"

#include <atomic>
#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "lib/runtime/bundle.h"
#include "lib/runtime/checkpoint.h"
#include "lib/runtime/job_records.h"
#include "tests/runtime/runtime_testing.h"

namespace dtf::runtime {
namespace {

using testing::LoadJobWithRecords;
using testing::WriteExampleJob;

// The accuracy goals: Titanic's original model on a held-out 20% split, and
// TensorFlow's census wide & deep model on adult.test.
TEST(Trainer, TitanicReachesItsAccuracyGoal) {
  dtf::testing::TempDir dir;
  StatusOr<std::string> path = WriteExampleJob("titanic", dir);
  ASSERT_TRUE(path.ok()) << path.status();
  StatusOr<JobFile> job = LoadJobWithRecords(*path);
  ASSERT_TRUE(job.ok()) << job.status();
  int evals = 0;
  TrainOptions options;
  options.on_eval = [&](const EvalReport&) { ++evals; };
  StatusOr<TrainResult> r = Train(*job, options);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->eval.has_value());
  EXPECT_EQ(r->eval->split, "eval");
  EXPECT_GE(*r->eval->metrics.Get("accuracy"), 0.78);
  EXPECT_GT(*r->eval->metrics.Get("auc"), 0.80);
  EXPECT_EQ(evals, 20);  // after each epoch
  EXPECT_GT(r->examples_per_sec, 0);
  EXPECT_TRUE(std::filesystem::exists(r->checkpoint));
  EXPECT_TRUE(std::filesystem::exists(r->export_dir + "/model.toml"));
}

TEST(Trainer, CensusWideDeepReachesItsAccuracyGoal) {
  dtf::testing::TempDir dir;
  StatusOr<std::string> path = WriteExampleJob("census", dir);
  ASSERT_TRUE(path.ok()) << path.status();
  StatusOr<JobFile> job = LoadJobWithRecords(*path);
  ASSERT_TRUE(job.ok()) << job.status();
  StatusOr<TrainResult> r = Train(*job, {});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->eval.has_value());
  EXPECT_EQ(r->eval->metrics.examples, 16281);  // all of adult.test
  EXPECT_GE(*r->eval->metrics.Get("accuracy"), 0.85);
  EXPECT_GT(*r->eval->metrics.Get("auc"), 0.88);

  // The exported model scores the evaluation split exactly as the trainer
  // did.
  StatusOr<LoadedModel> loaded = LoadExportedModel(r->export_dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  StatusOr<JobRecords> records = FindJobRecords(*job);
  ASSERT_TRUE(records.ok());
  StatusOr<EvalMetrics> again =
      Evaluate(kernels::Context::Cpu(0), loaded->layer, *loaded->model,
               records->eval, 1024);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_DOUBLE_EQ(*again->Get("accuracy"), *r->eval->metrics.Get("accuracy"));
  EXPECT_NEAR(*again->Get("loss"), *r->eval->metrics.Get("loss"), 1e-6);
}

// Without shuffling, 30 steps and then 30 more from the checkpoint end
// exactly where 60 steps in one go end.
TEST(Trainer, ResumingFromTheCheckpointContinuesExactly) {
  dtf::testing::TempDir dir;
  StatusOr<std::string> path = WriteExampleJob(
      "titanic", dir, {{"shuffle_buffer = 1000", "shuffle_buffer = 0"}});
  ASSERT_TRUE(path.ok()) << path.status();
  StatusOr<JobFile> job = LoadJobWithRecords(*path);
  ASSERT_TRUE(job.ok()) << job.status();
  TrainOptions options;
  options.eval = false;
  options.threads = 1;
  options.steps = 30;
  ASSERT_TRUE(Train(*job, options).ok());
  std::vector<std::string> notes;
  options.on_note = [&](std::string_view n) { notes.emplace_back(n); };
  options.steps = 60;
  StatusOr<TrainResult> resumed = Train(*job, options);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(resumed->steps, 60);
  EXPECT_EQ(resumed->examples, 30 * 32);
  ASSERT_FALSE(notes.empty());
  EXPECT_NE(notes[0].find("at step 30"), std::string::npos) << notes[0];

  JobFile fresh = *job;
  fresh.train.output_dir = dir.Join("fresh");
  options.on_note = nullptr;
  StatusOr<TrainResult> straight = Train(fresh, options);
  ASSERT_TRUE(straight.ok()) << straight.status();
  StatusOr<Bundle> a = Bundle::ReadFile(resumed->export_dir + "/variables.dtf");
  StatusOr<Bundle> b =
      Bundle::ReadFile(straight->export_dir + "/variables.dtf");
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->entries().size(), b->entries().size());
  for (size_t i = 0; i < a->entries().size(); ++i) {
    EXPECT_EQ(a->entries()[i].name, b->entries()[i].name);
    EXPECT_TRUE(a->entries()[i].data == b->entries()[i].data)
        << a->entries()[i].name;
  }
}

TEST(Trainer, ACheckpointOfAnotherModelIsRefused) {
  dtf::testing::TempDir dir;
  StatusOr<std::string> path = WriteExampleJob("titanic", dir);
  ASSERT_TRUE(path.ok());
  StatusOr<JobFile> job = LoadJobWithRecords(*path);
  ASSERT_TRUE(job.ok()) << job.status();
  TrainOptions options;
  options.eval = false;
  options.steps = 2;
  ASSERT_TRUE(Train(*job, options).ok());
  job->model->hidden = {16};
  Status st = Train(*job, options).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(Message(st).find("deep/dense_0/kernel"), std::string::npos) << st;
  EXPECT_NE(Message(st).find("does not match the job"), std::string::npos);
  // --restart replaces it.
  options.resume = false;
  EXPECT_TRUE(Train(*job, options).ok());
}

TEST(Trainer, WithoutRecordsTheErrorSaysHowToWriteThem) {
  dtf::testing::TempDir dir;
  StatusOr<std::string> path = WriteExampleJob("titanic", dir);
  ASSERT_TRUE(path.ok());
  StatusOr<JobFile> job = LoadJobFile(*path);
  ASSERT_TRUE(job.ok());
  Status st = Train(*job, {}).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(Message(st).find("dtf gen-records --job " + *path),
            std::string::npos)
      << st;
}

TEST(Trainer, CancellingStopsWithACheckpoint) {
  dtf::testing::TempDir dir;
  StatusOr<std::string> path = WriteExampleJob("titanic", dir);
  ASSERT_TRUE(path.ok());
  StatusOr<JobFile> job = LoadJobWithRecords(*path);
  ASSERT_TRUE(job.ok());
  std::atomic<bool> cancel{false};
  TrainOptions options;
  options.cancel = &cancel;
  int64_t seen = 0;
  options.on_progress = [&](const TrainProgress& p) {
    seen = p.step;
    cancel = true;
  };
  Status st = Train(*job, options).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(seen, 10);  // log_every_steps = 10 in the job
  StatusOr<Bundle> ckpt =
      Bundle::ReadFile(job->train.output_dir + "/checkpoint.dtf");
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  EXPECT_EQ(*ckpt->GetInt64s("train/global_step"), std::vector<int64_t>{10});
}

}  // namespace
}  // namespace dtf::runtime
