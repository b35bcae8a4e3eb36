// The training loop driven with a fake Update (no parameter servers, no
// NCCL): the cadence of reports, evaluations and checkpoints, early
// stopping, cancellation, and the ranks' agreement.
#include "lib/runtime/train/train_loop.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/runtime/checkpoint/bundle.h"
#include "lib/runtime/checkpoint/checkpoint.h"
#include "lib/runtime/model/device.h"
#include "lib/runtime/model/optimizers.h"
#include "lib/runtime/train/job_records.h"
#include "lib/runtime/train/train_step.h"
#include "lib/runtime/train/update.h"
#include "tests/runtime/runtime_testing.h"

namespace dtf::runtime {
namespace {

// Counts what the loop asks of it; the variables never change (so the eval
// loss stays the same from one evaluation to the next). `others` answers
// for the other ranks at each agreement (numbered from 0).
class FakeUpdate : public Update {
 public:
  FakeUpdate(Model* model, std::vector<kernels::OptimizerState> states)
      : model_(model), states_(std::move(states)) {}

  bool collective_ = false;
  bool independent_ = false;
  bool prefetch_ = false;
  // The vote rides on Apply (Update::votes_in_apply); `votes` counts the
  // Vote calls, `agreements` every vote.
  bool votes_ = false;
  int64_t votes = 0;
  std::function<Agreement(int64_t)> others;
  // The error of agreement n, or of the Apply of step n (numbered from 0);
  // OK: none.
  std::function<Status(int64_t)> agree_error, apply_error;
  // The error of the Pull of step n; OK: none.
  std::function<Status(int64_t)> pull_error;
  // What consistent() answers once an Apply failed.
  bool consistent_after_failure = true;
  // AppliedOnReturn is false for the last batch (a sync step pushed
  // without a pull).
  bool last_step_queued = false;
  bool apply_failed = false;

  int64_t step = 0;
  int64_t rows = 0;
  int pulls = 0;
  int dones = 0;
  int end_runs = 0;
  int64_t agreements = 0;
  // The global step at each whole-model gather.
  std::vector<int64_t> evaluated_at, checkpointed_at;

  bool prefetch() const override { return prefetch_; }
  bool collective() const override { return collective_; }
  bool independent_workers() const override { return independent_; }
  int64_t global_step() const override { return step; }
  bool consistent() const override {
    return !apply_failed || consistent_after_failure;
  }
  Status Pull(const PreparedBatch& batch) override {
    if (!batch.more) return InternalError("a step on no batch");
    if (pull_error) DTF_RETURN_IF_ERROR(pull_error(step));
    ++pulls;
    return OkStatus();
  }
  StatusOr<Agreement> Agree(Agreement mine) override {
    const int64_t n = agreements++;
    if (agree_error) DTF_RETURN_IF_ERROR(agree_error(n));
    if (!others) return mine;
    return std::min(mine, others(n));
  }
  bool votes_in_apply() const override { return votes_; }
  Agreement Agreed() const override { return agreed_; }
  StatusOr<Agreement> Vote(Agreement mine) override {
    ++votes;
    agreed_ = Agree(mine).value_or(Agreement::kCancel);
    return agreed_;
  }
  Status Apply(const PreparedBatch& batch, float, std::vector<Gradient>*,
               const PreparedBatch&) override {
    if (votes_) {
      DTF_ASSIGN_OR_RETURN(agreed_, Agree(Agreement::kStep));
      if (agreed_ != Agreement::kStep) return OkStatus();
    }
    if (apply_error) {
      if (Status st = apply_error(step); !st.ok()) {
        apply_failed = true;
        return st;
      }
    }
    ++step;
    rows += batch.batch.rows;
    return OkStatus();
  }
  bool AppliedOnReturn(const PreparedBatch& next) const override {
    return next.more || !last_step_queued;
  }
  Status WithDeviceModel(const std::function<Status(Model&)>& use) override {
    evaluated_at.push_back(step);
    return use(*model_);
  }
  Status WithHostModel(bool slots, const HostUse& use) override {
    if (slots) checkpointed_at.push_back(step);
    return use(model_, states_);
  }
  Status Done() override {
    ++dones;
    return OkStatus();
  }
  Status EndRun() override {
    ++end_runs;
    return OkStatus();
  }

 private:
  Model* model_;
  std::vector<kernels::OptimizerState> states_;
  Agreement agreed_ = Agreement::kStep;
};

class TrainLoopTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new dtf::testing::TempDir("train_loop_test");
    // Without batch normalization a step that changes no variable leaves
    // the model as it was.
    StatusOr<std::string> path = testing::WriteExampleJob(
        "titanic", *dir_, {{"batch_norm = true", "batch_norm = false"}});
    ASSERT_TRUE(path.ok()) << path.status();
    StatusOr<JobFile> job = testing::LoadJobWithRecords(*path);
    ASSERT_TRUE(job.ok()) << job.status();
    job_ = new JobFile(*std::move(job));
  }
  static void TearDownTestSuite() {
    delete job_;
    delete dir_;
  }

  void SetUp() override {
    ASSERT_NE(job_, nullptr);
    StatusOr<JobRecords> records = FindJobRecords(*job_);
    ASSERT_TRUE(records.ok()) << records.status();
    records_ = *std::move(records);
    StatusOr<FeatureLayer> layer =
        FeatureLayer::Create(job_->schema, job_->features, *job_->model);
    ASSERT_TRUE(layer.ok()) << layer.status();
    layer_ = std::make_unique<FeatureLayer>(*std::move(layer));
    ASSERT_TRUE(FitNormalizer(ctx_, records_.train, layer_.get()).ok());
    StatusOr<std::unique_ptr<Model>> model =
        Model::Create(*layer_, *job_->model, 1);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = *std::move(model);
    StatusOr<Optimizers> optimizers = MakeOptimizers(job_->train);
    ASSERT_TRUE(optimizers.ok()) << optimizers.status();
    update_ = std::make_unique<FakeUpdate>(
        model_.get(),
        NewOptimizerStates(*optimizers, *model_, VariableShapes(*model_)));
    options_.loss = job_->model->loss;
    options_.name = "worker:0";
    hooks_.on_eval = [&](const EvalReport& r) { evals_.push_back(r.step); };
    hooks_.on_progress = [&](const TrainProgress& p) { reports_.push_back(p); };
    hooks_.on_note = [&](std::string_view text) { notes_.emplace_back(text); };
    hooks_.cancel = &cancel_;
  }

  // Runs the loop over `epochs` of the training split (-1: repeated), as
  // the chief unless `chief` is false.
  StatusOr<TrainResult> Run(int64_t epochs, bool chief = true) {
    InputPipelineOptions input;
    input.files = records_.train;
    input.features = layer_->ParseSpecs(/*with_label=*/true);
    input.batch_size = kBatch;
    input.epochs = epochs;
    input.seed = 3;
    DTF_ASSIGN_OR_RETURN(auto pipeline, InputPipeline::Create(input));
    ChiefOptions c;
    c.output_dir = out_.path();
    c.model_toml = "[model]\n";
    c.eval_files = records_.eval;
    c.eval_split = "eval";
    Chief the_chief(train_, std::move(c), ctx_, layer_.get(), hooks_);
    TrainLoopParts parts;
    parts.ctx = &ctx_;
    parts.layer = layer_.get();
    parts.model = model_.get();
    parts.input = pipeline.get();
    parts.update = update_.get();
    parts.chief = chief ? &the_chief : nullptr;
    return RunTrainLoop(options_, hooks_, parts);
  }

  // Early stopping after one evaluation without improvement, an
  // evaluation every 5 steps.
  StatusOr<TrainResult> RunToEarlyStop() {
    train_.early_stopping = EarlyStoppingSpec{};
    train_.early_stopping->patience = 1;
    options_.max_steps = 100;
    options_.eval_every_steps = 5;
    return Run(-1);
  }

  // A collective run in which another rank has no batch from its fourth
  // agreement on, evaluated every 2 steps.
  StatusOr<TrainResult> RunUntilAnotherRankEnds(bool votes_in_apply) {
    update_->collective_ = true;
    update_->votes_ = votes_in_apply;
    update_->others = [](int64_t n) {
      return n < 3 ? Agreement::kStep : Agreement::kEnd;
    };
    options_.eval_every_steps = 2;
    return Run(-1);
  }

  std::string CheckpointPath() const {
    return out_.Join(std::string(kCheckpointFile));
  }

  static constexpr int64_t kBatch = 32;
  static dtf::testing::TempDir* dir_;
  static JobFile* job_;
  const kernels::Context ctx_ = kernels::Context::Cpu(2);
  dtf::testing::TempDir out_{"train_loop_out"};
  TrainSpec train_;
  JobRecords records_;
  std::unique_ptr<FeatureLayer> layer_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<FakeUpdate> update_;
  TrainLoopOptions options_;
  TrainHooks hooks_;
  std::atomic<bool> cancel_{false};
  std::vector<int64_t> evals_;
  std::vector<TrainProgress> reports_;
  std::vector<std::string> notes_;
};

dtf::testing::TempDir* TrainLoopTest::dir_ = nullptr;
JobFile* TrainLoopTest::job_ = nullptr;

TEST_F(TrainLoopTest, EvaluatesEveryEvalEveryStepsAndAtTheEnd) {
  options_.max_steps = 10;
  options_.eval_every_steps = 3;
  StatusOr<TrainResult> r = Run(-1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->steps, 10);
  EXPECT_EQ(evals_, (std::vector<int64_t>{3, 6, 9, 10}));
  EXPECT_EQ(update_->evaluated_at, (std::vector<int64_t>{3, 6, 9, 10}));
  ASSERT_TRUE(r->eval.has_value());
  EXPECT_EQ(r->eval->step, 10);
  EXPECT_EQ(r->eval->split, "eval");
  EXPECT_EQ(update_->dones, 1);
  EXPECT_EQ(update_->end_runs, 1);
  EXPECT_TRUE(std::filesystem::exists(r->export_dir));
}

TEST_F(TrainLoopTest, NoSecondEvaluationAtAStepJustEvaluated) {
  options_.max_steps = 9;
  options_.eval_every_steps = 3;
  StatusOr<TrainResult> r = Run(-1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(evals_, (std::vector<int64_t>{3, 6, 9}));
}

TEST_F(TrainLoopTest, IndependentWorkersAreAlwaysEvaluatedAtTheEnd) {
  update_->independent_ = true;
  options_.max_steps = 9;
  options_.eval_every_steps = 3;
  StatusOr<TrainResult> r = Run(-1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(evals_, (std::vector<int64_t>{3, 6, 9, 9}));
}

TEST_F(TrainLoopTest, EvaluatesAndReportsAfterEachEpoch) {
  StatusOr<TrainResult> r = Run(2);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(evals_.size(), 2u);
  EXPECT_GT(evals_[0], 0);
  EXPECT_LT(evals_[0], r->steps);
  EXPECT_EQ(evals_[1], r->steps);
  ASSERT_EQ(reports_.size(), 2u);
  EXPECT_EQ(reports_[0].epoch, 1);
  EXPECT_EQ(reports_[0].step, evals_[0]);
  EXPECT_EQ(reports_[1].epoch, 2);
  EXPECT_EQ(reports_[1].examples, update_->rows);
  EXPECT_EQ(r->examples, update_->rows);
}

TEST_F(TrainLoopTest, ReportsEveryLogEveryStepsAndTheRest) {
  options_.max_steps = 7;
  options_.log_every_steps = 2;
  options_.evaluate = false;
  StatusOr<TrainResult> r = Run(-1);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<int64_t> steps;
  for (const TrainProgress& p : reports_) steps.push_back(p.step);
  EXPECT_EQ(steps, (std::vector<int64_t>{2, 4, 6, 7}));
  EXPECT_EQ(reports_.back().examples, 7 * kBatch);
  EXPECT_EQ(r->examples, 7 * kBatch);
  EXPECT_EQ(update_->pulls, 7);
  EXPECT_GT(r->loss, 0);
  EXPECT_TRUE(evals_.empty());
  EXPECT_TRUE(update_->evaluated_at.empty());
}

TEST_F(TrainLoopTest, CadenceCountsFromTheFirstStep) {
  // A resumed run: its global step starts at 5, and the cadence is of the
  // global step.
  update_->step = 5;
  options_.first_step = 5;
  options_.max_steps = 12;
  options_.log_every_steps = 4;
  options_.evaluate = false;
  StatusOr<TrainResult> r = Run(-1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->steps, 12);
  EXPECT_EQ(r->examples, 7 * kBatch);
  std::vector<int64_t> steps;
  for (const TrainProgress& p : reports_) steps.push_back(p.step);
  EXPECT_EQ(steps, (std::vector<int64_t>{8, 12}));
}

TEST_F(TrainLoopTest, WritesCheckpointsEveryCheckpointEverySteps) {
  options_.max_steps = 10;
  options_.checkpoint_every_steps = 4;
  options_.evaluate = false;
  StatusOr<TrainResult> r = Run(-1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(update_->checkpointed_at, (std::vector<int64_t>{4, 8, 10}));
  EXPECT_EQ(r->checkpoint, CheckpointPath());
  StatusOr<Bundle> bundle = Bundle::ReadFile(CheckpointPath());
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  StatusOr<std::vector<int64_t>> step = bundle->GetInt64s("train/global_step");
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_EQ(*step, (std::vector<int64_t>{10}));
}

TEST_F(TrainLoopTest, EarlyStoppingEndsTheLoop) {
  StatusOr<TrainResult> r = RunToEarlyStop();
  ASSERT_TRUE(r.ok()) << r.status();
  // The eval loss stays the same: the second evaluation is no better.
  EXPECT_EQ(r->steps, 10);
  EXPECT_TRUE(r->stopped_early);
  EXPECT_EQ(evals_, (std::vector<int64_t>{5, 10}));
  ASSERT_TRUE(r->best_eval.has_value());
  EXPECT_EQ(r->best_eval->step, 5);
  // At once, without another agreement.
  EXPECT_EQ(update_->agreements, 10);
}

TEST_F(TrainLoopTest, EarlyStoppingReachesEveryRankInTheNextAgreement) {
  update_->collective_ = true;
  StatusOr<TrainResult> r = RunToEarlyStop();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->steps, 10);
  EXPECT_TRUE(r->stopped_early);
  // Ten agreements to step, the eleventh to end.
  EXPECT_EQ(update_->agreements, 11);
}

TEST_F(TrainLoopTest, ARankWithoutABatchEndsTheLoopForAll) {
  StatusOr<TrainResult> r = RunUntilAnotherRankEnds(/*votes_in_apply=*/false);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->steps, 3);
  EXPECT_EQ(update_->pulls, 3);
  // The chief ends the run as usual: an evaluation of the last step, its
  // checkpoint.
  EXPECT_EQ(evals_, (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(std::filesystem::exists(CheckpointPath()));
}

// With the vote in Apply: the step of the vote that ends the loop ran on
// this rank but is neither applied nor counted.
TEST_F(TrainLoopTest, AVoteInApplyToEndLeavesItsStepUnapplied) {
  StatusOr<TrainResult> r = RunUntilAnotherRankEnds(/*votes_in_apply=*/true);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->steps, 3);
  EXPECT_EQ(update_->step, 3);
  EXPECT_EQ(update_->rows, 3 * kBatch);
  EXPECT_EQ(r->examples, 3 * kBatch);
  EXPECT_EQ(update_->pulls, 4);
  EXPECT_EQ(update_->agreements, 4);
  EXPECT_EQ(update_->votes, 0);
  EXPECT_EQ(evals_, (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(std::filesystem::exists(CheckpointPath()));
}

// With the vote in Apply, the chief's early stop is its Vote: no step run.
TEST_F(TrainLoopTest, EarlyStoppingIsTheChiefsVote) {
  update_->collective_ = true;
  update_->votes_ = true;
  StatusOr<TrainResult> r = RunToEarlyStop();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->steps, 10);
  EXPECT_TRUE(r->stopped_early);
  EXPECT_EQ(update_->pulls, 10);
  EXPECT_EQ(update_->agreements, 11);
  EXPECT_EQ(update_->votes, 1);
}

// In an agreement of its own or in the vote that Apply carries.
TEST_F(TrainLoopTest, ARankCancelledCancelsEveryRank) {
  for (const bool votes_in_apply : {false, true}) {
    SCOPED_TRACE(votes_in_apply ? "vote in Apply" : "agreement");
    SetUp();
    update_->collective_ = true;
    update_->votes_ = votes_in_apply;
    update_->others = [](int64_t n) {
      return n < 4 ? Agreement::kStep : Agreement::kCancel;
    };
    StatusOr<TrainResult> r = Run(-1);
    ASSERT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();
    EXPECT_EQ(update_->step, 4);
    EXPECT_EQ(update_->checkpointed_at, (std::vector<int64_t>{4}));
    EXPECT_EQ(update_->dones, 0);
  }
}

// A peer lost in a collective update's agreement: the chief stops with
// that error, after writing its checkpoint as on cancel.
TEST_F(TrainLoopTest, AFailedAgreementStopsTheChiefWithItsCheckpoint) {
  update_->collective_ = true;
  options_.evaluate = false;
  update_->agree_error = [](int64_t n) {
    return n < 4 ? OkStatus()
                 : UnavailableError(
                       "ncclAllReduce (min of one float) on rank 0 of 2: "
                       "asynchronous error: NCCL error 6");
  };
  StatusOr<TrainResult> r = Run(-1);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  EXPECT_EQ(std::string(Message(r.status())),
            StrCat("worker:0: stopped at step 4: ncclAllReduce (min of one "
                   "float) on rank 0 of 2: asynchronous error: NCCL error 6; "
                   "checkpoint ",
                   CheckpointPath()));
  EXPECT_EQ(update_->step, 4);
  EXPECT_EQ(update_->checkpointed_at, (std::vector<int64_t>{4}));
  EXPECT_TRUE(std::filesystem::exists(CheckpointPath()));
  EXPECT_EQ(update_->dones, 0);
  EXPECT_EQ(update_->end_runs, 0);
}

// A collective that failed after the step changed some variables: no
// checkpoint of a model part-way through a step.
TEST_F(TrainLoopTest, AnApplyFailedPartWayWritesNoCheckpoint) {
  update_->collective_ = true;
  options_.evaluate = false;
  update_->consistent_after_failure = false;
  update_->apply_error = [](int64_t step) {
    return step < 3 ? OkStatus()
                    : DeadlineExceededError(
                          "ncclAllReduce (mean of 10 floats) on rank 0 of 2: "
                          "not done within 300 s");
  };
  StatusOr<TrainResult> r = Run(-1);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded)
      << r.status();
  EXPECT_EQ(std::string(Message(r.status())),
            "worker:0: stopped at step 3: ncclAllReduce (mean of 10 floats) "
            "on rank 0 of 2: not done within 300 s; no checkpoint: the "
            "failed step left the variables part-way through its update");
  EXPECT_TRUE(update_->checkpointed_at.empty());
  EXPECT_FALSE(std::filesystem::exists(CheckpointPath()));
}

// A failed Apply that changed nothing leaves a model to checkpoint.
TEST_F(TrainLoopTest, AnApplyFailedBeforeAnyChangeWritesTheCheckpoint) {
  update_->collective_ = true;
  options_.evaluate = false;
  update_->apply_error = [](int64_t step) {
    return step < 2 ? OkStatus() : UnavailableError("peer lost");
  };
  StatusOr<TrainResult> r = Run(-1);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  EXPECT_EQ(std::string(Message(r.status())),
            StrCat("worker:0: stopped at step 2: peer lost; checkpoint ",
                   CheckpointPath()));
  EXPECT_EQ(update_->checkpointed_at, (std::vector<int64_t>{2}));
}

// A collective aborted by the run's cancel is a cancel.
TEST_F(TrainLoopTest, ACollectiveCancelledWhileItWaitedIsACancel) {
  update_->collective_ = true;
  options_.evaluate = false;
  update_->apply_error = [&](int64_t step) {
    if (step < 5) return OkStatus();
    cancel_ = true;
    return CancelledError(
        "ncclAllReduce (mean of 10 floats) on rank 0 of 2: cancelled");
  };
  StatusOr<TrainResult> r = Run(-1);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();
  EXPECT_EQ(
      std::string(Message(r.status())),
      StrCat("worker:0: stopped at step 5; checkpoint ", CheckpointPath()));
  EXPECT_EQ(update_->checkpointed_at, (std::vector<int64_t>{5}));
}

// While the run is being stopped, a peer that aborted first breaks the
// collective: still a cancel.
TEST_F(TrainLoopTest, APeerLostWhileTheRunStopsIsACancel) {
  update_->collective_ = true;
  options_.evaluate = false;
  update_->agree_error = [&](int64_t n) {
    if (n < 3) return OkStatus();
    cancel_ = true;
    return UnavailableError("rank 0 of 2: asynchronous error: peer lost");
  };
  StatusOr<TrainResult> r = Run(-1);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();
  EXPECT_EQ(
      std::string(Message(r.status())),
      StrCat("worker:0: stopped at step 3; checkpoint ", CheckpointPath()));
  EXPECT_EQ(update_->checkpointed_at, (std::vector<int64_t>{3}));
}

// Another rank ends with the error and writes nothing.
TEST_F(TrainLoopTest, AFailedCollectiveStopsAnotherWorkerWithTheError) {
  update_->collective_ = true;
  options_.name = "worker:1";
  update_->agree_error = [](int64_t n) {
    return n < 2 ? OkStatus() : UnavailableError("rank 1 of 2: peer lost");
  };
  StatusOr<TrainResult> r = Run(-1, /*chief=*/false);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  EXPECT_EQ(std::string(Message(r.status())),
            "worker:1: stopped at step 2: rank 1 of 2: peer lost");
  EXPECT_TRUE(update_->checkpointed_at.empty());
  EXPECT_FALSE(std::filesystem::exists(CheckpointPath()));
}

// An update that is not collective fails as it did: its error, no
// checkpoint.
TEST_F(TrainLoopTest, AFailedApplyOfAnotherUpdateIsReturnedAsItIs) {
  options_.evaluate = false;
  update_->apply_error = [](int64_t step) {
    return step < 2 ? OkStatus() : UnavailableError("Push: ps:0 lost");
  };
  StatusOr<TrainResult> r = Run(-1);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  EXPECT_EQ(std::string(Message(r.status())), "Push: ps:0 lost");
  EXPECT_TRUE(update_->checkpointed_at.empty());
}

// A parameter-server call that the task's stop flag cut short (SIGTERM
// while a Step waited) is a cancel: the chief writes its checkpoint.
TEST_F(TrainLoopTest, AnUpdateCallCutShortByTheStopFlagIsACancel) {
  options_.evaluate = false;
  update_->independent_ = true;
  update_->apply_error = [&](int64_t step) {
    if (step < 4) return OkStatus();
    cancel_ = true;
    return CancelledError(
        "ps:0 (127.0.0.1:1): Session: cancelled, the task is stopping");
  };
  StatusOr<TrainResult> r = Run(-1);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();
  EXPECT_EQ(
      std::string(Message(r.status())),
      StrCat("worker:0: stopped at step 4; checkpoint ", CheckpointPath()));
  EXPECT_EQ(update_->checkpointed_at, (std::vector<int64_t>{4}));
  EXPECT_EQ(update_->dones, 1);
}

// The same for the pull before a step.
TEST_F(TrainLoopTest, APullCutShortByTheStopFlagIsACancel) {
  options_.evaluate = false;
  update_->independent_ = true;
  update_->pull_error = [&](int64_t step) {
    if (step < 2) return OkStatus();
    cancel_ = true;
    return CancelledError("ps:1: Session: cancelled, the task is stopping");
  };
  StatusOr<TrainResult> r = Run(-1);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();
  EXPECT_EQ(update_->checkpointed_at, (std::vector<int64_t>{2}));
  EXPECT_TRUE(std::filesystem::exists(CheckpointPath()));
}

TEST_F(TrainLoopTest, CancelWritesACheckpointAndReturnsCancelled) {
  options_.log_every_steps = 1;
  options_.evaluate = false;
  hooks_.on_progress = [&](const TrainProgress& p) {
    if (p.step == 5) cancel_ = true;
  };
  StatusOr<TrainResult> r = Run(-1);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();
  EXPECT_NE(r.status().message().find("worker:0: stopped at step 5"),
            std::string::npos)
      << r.status();
  EXPECT_NE(r.status().message().find(CheckpointPath()), std::string::npos);
  EXPECT_EQ(update_->step, 5);
  EXPECT_EQ(update_->checkpointed_at, (std::vector<int64_t>{5}));
  EXPECT_TRUE(std::filesystem::exists(CheckpointPath()));
  EXPECT_EQ(update_->dones, 0);
  EXPECT_EQ(update_->end_runs, 0);
}

TEST_F(TrainLoopTest, ACancelledWorkerThatIsNotTheChiefWritesNothing) {
  options_.name = "worker:1";
  options_.log_every_steps = 1;
  hooks_.on_progress = [&](const TrainProgress& p) {
    if (p.step == 3) cancel_ = true;
  };
  StatusOr<TrainResult> r = Run(-1, /*chief=*/false);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();
  EXPECT_EQ(r.status().message(), "worker:1: stopped at step 3");
  EXPECT_TRUE(update_->checkpointed_at.empty());
  EXPECT_FALSE(std::filesystem::exists(CheckpointPath()));
}

TEST_F(TrainLoopTest, AWorkerThatIsNotTheChiefOnlyTrains) {
  options_.max_steps = 6;
  options_.eval_every_steps = 2;
  options_.checkpoint_every_steps = 2;
  StatusOr<TrainResult> r = Run(-1, /*chief=*/false);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->steps, 6);
  EXPECT_TRUE(evals_.empty());
  EXPECT_TRUE(update_->checkpointed_at.empty());
  EXPECT_FALSE(r->eval.has_value());
  EXPECT_TRUE(r->checkpoint.empty());
  EXPECT_EQ(update_->dones, 1);
  EXPECT_EQ(update_->end_runs, 0);
}

TEST_F(TrainLoopTest, EndTrainingEndsTheLoopAsWhenTheDataRunsOut) {
  std::atomic<bool> end{false};
  options_.end_training = &end;
  options_.log_every_steps = 1;
  options_.evaluate = false;
  hooks_.on_progress = [&](const TrainProgress& p) {
    if (p.step == 4) end = true;
  };
  StatusOr<TrainResult> r = Run(-1, /*chief=*/false);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->steps, 4);
  EXPECT_EQ(update_->dones, 1);
}

TEST_F(TrainLoopTest, PrefetchedBatchesTrainTheSameSteps) {
  update_->prefetch_ = true;
  options_.max_steps = 6;
  options_.evaluate = false;
  StatusOr<TrainResult> r = Run(-1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->steps, 6);
  EXPECT_EQ(r->examples, 6 * kBatch);
  EXPECT_EQ(update_->pulls, 6);
}

TEST_F(TrainLoopTest, ThePositionKeptInTheCheckpointIsAfterTheLastStep) {
  options_.max_steps = 3;
  options_.evaluate = false;
  options_.record_position = true;
  StatusOr<TrainResult> r = Run(-1);
  ASSERT_TRUE(r.ok()) << r.status();
  StatusOr<Bundle> bundle = Bundle::ReadFile(CheckpointPath());
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  FeatureLayer layer = *layer_;
  StatusOr<std::unique_ptr<Model>> model =
      Model::Create(layer, *job_->model, 1);
  ASSERT_TRUE(model.ok());
  StatusOr<Optimizers> optimizers = MakeOptimizers(job_->train);
  ASSERT_TRUE(optimizers.ok());
  std::vector<kernels::OptimizerState> states =
      NewOptimizerStates(*optimizers, **model, VariableShapes(**model));
  TrainState state;
  ASSERT_TRUE(
      RestoreCheckpoint(*bundle, &layer, model->get(), &states, &state).ok());
  EXPECT_EQ(state.global_step, 3);
  // Three batches read, none more: the next run reads on from the fourth.
  InputPipelineOptions input;
  input.files = records_.train;
  input.features = layer_->ParseSpecs(/*with_label=*/true);
  input.batch_size = kBatch;
  input.epochs = -1;
  input.seed = 3;
  StatusOr<std::unique_ptr<InputPipeline>> pipeline =
      InputPipeline::Create(input);
  ASSERT_TRUE(pipeline.ok());
  Batch batch;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE((*pipeline)->Next(&batch).ok());
  EXPECT_EQ(state.position, (*pipeline)->position());
}

// on_step (what a worker's heartbeats carry): the start position first, then
// the position after each step whose update the variables hold — not after
// a last step the update only queued.
TEST_F(TrainLoopTest, OnStepReportsThePositionOfTheStepsApplied) {
  for (const bool queued : {false, true}) {
    SCOPED_TRACE(queued ? "last step queued" : "every step applied");
    update_ = std::make_unique<FakeUpdate>(
        model_.get(), std::vector<kernels::OptimizerState>{});
    update_->last_step_queued = queued;
    std::vector<InputPosition> reported;
    hooks_.on_step = [&](int64_t steps_done, int64_t global_step,
                         const InputPosition& position) {
      EXPECT_EQ(steps_done, int64_t(reported.size()));
      EXPECT_EQ(global_step, steps_done);
      reported.push_back(position);
    };
    StatusOr<TrainResult> r = Run(1, /*chief=*/false);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(int64_t(reported.size()), r->steps + 1);
    ASSERT_GE(reported.size(), 3u);
    EXPECT_EQ(reported.front(), InputPosition{});
    // What a pipeline read before each batch: the position after it.
    InputPipelineOptions input;
    input.files = records_.train;
    input.features = layer_->ParseSpecs(/*with_label=*/true);
    input.batch_size = kBatch;
    input.epochs = 1;
    input.seed = 3;
    StatusOr<std::unique_ptr<InputPipeline>> pipeline =
        InputPipeline::Create(input);
    ASSERT_TRUE(pipeline.ok());
    Batch batch;
    for (size_t i = 1; i + 1 < reported.size(); ++i) {
      ASSERT_TRUE((*pipeline)->Next(&batch).ok());
      EXPECT_EQ(reported[i], (*pipeline)->position()) << i;
    }
    const InputPosition before_last = (*pipeline)->position();
    ASSERT_TRUE((*pipeline)->Next(&batch).ok());
    EXPECT_EQ(reported.back(), queued ? before_last : (*pipeline)->position());
  }
}

}  // namespace
}  // namespace dtf::runtime
