#include "lib/runtime/train/trainer.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/runtime/checkpoint/bundle.h"
#include "lib/runtime/export/exported_model.h"
#include "lib/runtime/train/job_records.h"
#include "tests/runtime/runtime_testing.h"

namespace dtf::runtime {
namespace {

using testing::LoadJobWithRecords;
using testing::WriteExampleJob;

// The exported model at `export_dir` scored on `job`'s evaluation split.
StatusOr<EvalMetrics> ScoreExport(const std::string& export_dir,
                                  const JobFile& job) {
  DTF_ASSIGN_OR_RETURN(LoadedModel loaded, LoadExportedModel(export_dir));
  DTF_ASSIGN_OR_RETURN(const JobRecords records, FindJobRecords(job));
  return Evaluate(kernels::Context::Cpu(1), loaded.layer, *loaded.model,
                  records.eval, 1024);
}

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
  // Binary labels: precision, recall and PR-AUC too, and the class balance.
  for (const char* name : {"precision", "recall", "pr_auc"}) {
    ASSERT_TRUE(r->eval->metrics.Get(name).has_value()) << name;
    EXPECT_GT(*r->eval->metrics.Get(name), 0.5) << name;
    EXPECT_LE(*r->eval->metrics.Get(name), 1.0) << name;
  }
  ASSERT_TRUE(r->eval->metrics.positive_rate.has_value());
  EXPECT_GT(*r->eval->metrics.positive_rate, 0.3);
  EXPECT_LT(*r->eval->metrics.positive_rate, 0.45);
  EXPECT_EQ(evals, 20);  // after each epoch
  // Without early stopping the best evaluation (by loss) is still kept.
  ASSERT_TRUE(r->best_eval.has_value());
  EXPECT_EQ(r->best_metric, "loss");
  EXPECT_FALSE(r->stopped_early);
  EXPECT_TRUE(std::filesystem::exists(r->best_checkpoint));
  EXPECT_GT(r->examples_per_sec, 0);
  EXPECT_TRUE(std::filesystem::exists(r->checkpoint));
  EXPECT_TRUE(std::filesystem::exists(r->export_dir + "/model.toml"));
}

// A job that overfits (a wide deep part, a high learning rate: the eval loss
// falls to its lowest near epoch 8, then climbs): early stopping ends it
// `patience` evaluations after its best, and the exported model is the best
// evaluation's, not the last step's.
TEST(Trainer, EarlyStoppingEndsAnOverfittingJobAndExportsTheBest) {
  dtf::testing::TempDir dir;
  StatusOr<std::string> path = WriteExampleJob(
      "titanic", dir,
      {{"hidden = [128]", "hidden = [256, 256]"},
       {"learning_rate = 0.05", "learning_rate = 0.3"},
       {"[train]\n",
        "[train]\nearly_stopping = { metric = \"loss\", patience = 3 }\n"}});
  ASSERT_TRUE(path.ok()) << path.status();
  StatusOr<JobFile> job = LoadJobWithRecords(*path);
  ASSERT_TRUE(job.ok()) << job.status();
  std::vector<EvalReport> evals;
  std::vector<std::string> notes;
  TrainOptions options;
  options.threads = 1;
  options.on_eval = [&](const EvalReport& e) { evals.push_back(e); };
  options.on_note = [&](std::string_view n) { notes.emplace_back(n); };
  StatusOr<TrainResult> r = Train(*job, options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->stopped_early);
  EXPECT_LT(r->steps, 20 * 23);  // 20 epochs of 23 steps
  ASSERT_TRUE(r->best_eval.has_value());
  ASSERT_GE(evals.size(), 4u);
  // The best is the lowest loss seen, and the last three were no better.
  double lowest = 1e9;
  for (const EvalReport& e : evals) {
    lowest = std::min(lowest, *e.metrics.Get("loss"));
  }
  EXPECT_EQ(*r->best_eval->metrics.Get("loss"), lowest);
  EXPECT_EQ(evals[evals.size() - 4].step, r->best_eval->step);
  EXPECT_EQ(evals.back().step, r->steps);
  EXPECT_GT(*r->eval->metrics.Get("loss"), lowest);
  EXPECT_EQ(r->best_checkpoint, job->train.output_dir + "/checkpoint-best.dtf");
  StatusOr<Bundle> best = Bundle::ReadFile(r->best_checkpoint);
  ASSERT_TRUE(best.ok()) << best.status();
  EXPECT_EQ(*best->GetInt64s("train/global_step"),
            std::vector<int64_t>{r->best_eval->step});
  bool said = false;
  for (const std::string& n : notes) {
    said = said || n.starts_with(
                       "early stopping: eval loss has not improved "
                       "for 3 evaluations");
  }
  EXPECT_TRUE(said);

  // The export scores the evaluation split as the best evaluation did.
  StatusOr<EvalMetrics> again = ScoreExport(r->export_dir, *job);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_NEAR(*again->Get("loss"), lowest, 1e-6);
  EXPECT_DOUBLE_EQ(*again->Get("accuracy"),
                   *r->best_eval->metrics.Get("accuracy"));
}

// At 1% positives a model that predicts "no" everywhere is 99% accurate:
// training says so, once, and reports precision, recall and PR-AUC.
TEST(Trainer, AccuracyAtTheMajorityRateIsFlaggedOnce) {
  dtf::testing::TempDir dir;
  std::string csv = "x,color,label\n";
  const char* colors[] = {"red", "green", "blue"};
  for (int i = 0; i < 2000; ++i) {
    StrAppend(&csv, i / 2000.0, ",", colors[i % 3], ",", i % 100 == 7 ? 1 : 0,
              "\n");
  }
  dtf::testing::WriteFile(dir.Join("data.csv"), csv);
  dtf::testing::WriteFile(dir.Join("dtf.toml"), R"([data]
csv = ["data.csv"]
split = { train = 0.8, eval = 0.2 }
records = "records"
[schema]
label = "label"
columns = ["x:float", "color:str", "label:int"]
[[features.numeric]]
name = "x"
[[features.categorical]]
name = "color"
vocabulary = ["red", "green", "blue"]
embedding = 4
wide = true
[model]
type = "wide_deep"
hidden = [8]
loss = "binary_crossentropy"
[train]
batch_size = 64
epochs = 10
seed = 1
threads = 1
)");
  StatusOr<JobFile> job = LoadJobWithRecords(dir.Join("dtf.toml"));
  ASSERT_TRUE(job.ok()) << job.status();
  std::vector<std::string> warnings;
  int evals = 0;
  TrainOptions options;
  options.on_eval = [&](const EvalReport&) { ++evals; };
  options.on_note = [&](std::string_view n) {
    if (n.find("majority-class rate") != std::string_view::npos) {
      warnings.emplace_back(n);
    }
  };
  StatusOr<TrainResult> r = Train(*job, options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(evals, 10);
  ASSERT_EQ(warnings.size(), 1u);  // once per run
  EXPECT_NE(warnings[0].find("the model may predict one class; see "
                             "precision, recall and pr_auc"),
            std::string::npos)
      << warnings[0];
  ASSERT_TRUE(r->eval.has_value());
  const EvalMetrics& m = r->eval->metrics;
  ASSERT_TRUE(m.positive_rate.has_value());
  EXPECT_NEAR(*m.positive_rate, 0.01, 0.01);
  EXPECT_LE(*m.Get("accuracy"), 1 - *m.positive_rate + 0.005);
  for (const char* name : {"precision", "recall", "pr_auc"}) {
    ASSERT_TRUE(m.Get(name).has_value()) << name;
    EXPECT_GE(*m.Get(name), 0.0) << name;
    EXPECT_LE(*m.Get(name), 1.0) << name;
  }
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

// A run resumed after its best evaluation goes on comparing against it: an
// overfitting job (as above, without early stopping) whose lowest eval loss
// is in its first part keeps that evaluation as the best, and exports its
// model, though the resumed part evaluates worse.
TEST(Trainer, AResumedRunKeepsTheBestOfTheWholeRun) {
  dtf::testing::TempDir dir;
  StatusOr<std::string> path =
      WriteExampleJob("titanic", dir,
                      {{"hidden = [128]", "hidden = [256, 256]"},
                       {"learning_rate = 0.05", "learning_rate = 0.3"}});
  ASSERT_TRUE(path.ok()) << path.status();
  StatusOr<JobFile> job = LoadJobWithRecords(*path);
  ASSERT_TRUE(job.ok()) << job.status();
  std::vector<EvalReport> first, second;
  std::vector<std::string> notes;
  TrainOptions options;
  options.threads = 1;
  options.epochs = 12;
  options.on_eval = [&](const EvalReport& e) { first.push_back(e); };
  StatusOr<TrainResult> part1 = Train(*job, options);
  ASSERT_TRUE(part1.ok()) << part1.status();
  ASSERT_TRUE(part1->best_eval.has_value());
  options.epochs = 20;
  options.on_eval = [&](const EvalReport& e) { second.push_back(e); };
  options.on_note = [&](std::string_view n) { notes.emplace_back(n); };
  StatusOr<TrainResult> part2 = Train(*job, options);
  ASSERT_TRUE(part2.ok()) << part2.status();
  ASSERT_FALSE(second.empty());
  EXPECT_GT(second.front().step, part1->steps);
  const auto lowest = [](const std::vector<EvalReport>& evals) {
    const EvalReport* best = &evals.front();
    for (const EvalReport& e : evals) {
      if (*e.metrics.Get("loss") < *best->metrics.Get("loss")) best = &e;
    }
    return *best;
  };
  const EvalReport best1 = lowest(first);
  // The job overfits: the first part holds the run's lowest loss.
  ASSERT_LT(*best1.metrics.Get("loss"), *lowest(second).metrics.Get("loss"));
  ASSERT_TRUE(part2->best_eval.has_value());
  EXPECT_EQ(part2->best_eval->step, best1.step);
  EXPECT_EQ(*part2->best_eval->metrics.Get("loss"), *best1.metrics.Get("loss"));
  bool said = false;
  for (const std::string& n : notes) {
    said = said || n.starts_with(StrCat("the best evaluation so far is step ",
                                        best1.step, "'s (loss "));
  }
  EXPECT_TRUE(said);
  StatusOr<Bundle> kept = Bundle::ReadFile(part2->best_checkpoint);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(*kept->GetInt64s("train/global_step"),
            std::vector<int64_t>{best1.step});
  // The export is the first part's best model.
  StatusOr<EvalMetrics> again = ScoreExport(part2->export_dir, *job);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_NEAR(*again->Get("loss"), *best1.metrics.Get("loss"), 1e-6);
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
  // The job fingerprint in the checkpoint tells, naming the file.
  EXPECT_NE(
      Message(st).find(job->train.output_dir + "/checkpoint.dtf: "
                                               "written for job fingerprint"),
      std::string::npos)
      << st;
  EXPECT_NE(Message(st).find("(its schema, features, model or optimizers "
                             "changed)"),
            std::string::npos)
      << st;
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
