// What a restored allreduce run starts from, without NCCL: what rank 0
// restores from the run's checkpoint, what it broadcasts (packed as
// floats) and where each rank's input starts.
#include "lib/runtime/train/allreduce_restore.h"

#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/runtime/checkpoint/checkpoint.h"
#include "lib/runtime/checkpoint/checkpoint_files.h"
#include "lib/runtime/model/optimizers.h"
#include "lib/runtime/train/job_records.h"
#include "lib/runtime/train/worker_loop.h"
#include "tests/runtime/runtime_testing.h"
#include "tests/testing/temp_dir.h"

namespace dtf::runtime {
namespace {

using ::testing::HasSubstr;

AllreduceResume Example() {
  AllreduceResume r;
  r.restored = true;
  r.global_step = (int64_t{1} << 40) + 12345;  // beyond a float's precision
  r.update_counts = {7, 0, int64_t{1} << 33};
  // The records yielded: counted, and not known (-1).
  r.positions = {InputPosition{2, 1, 70000, 123456, 99999}, std::nullopt,
                 InputPosition{0, 3, 5, 6, -1}};
  return r;
}

TEST(AllreduceResume, PacksAndUnpacksExactly) {
  const AllreduceResume r = Example();
  const std::vector<float> packed = PackAllreduceResume(r, 3, 3);
  ASSERT_EQ(packed.size(), AllreduceResumeSize(3, 3));
  for (float f : packed) {
    EXPECT_GE(f, 0.0f);
    EXPECT_LE(f, 65535.0f);
  }
  StatusOr<AllreduceResume> back = UnpackAllreduceResume(packed, 3, 3);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, r);

  // Ranks past the positions recorded come back unrecorded.
  StatusOr<AllreduceResume> wider =
      UnpackAllreduceResume(PackAllreduceResume(r, 3, 4), 3, 4);
  ASSERT_TRUE(wider.ok()) << wider.status();
  ASSERT_EQ(wider->positions.size(), 4u);
  EXPECT_FALSE(wider->positions[3].has_value());
  EXPECT_EQ(wider->global_step, r.global_step);

  // Another size, or a value that is not a 16-bit piece, is refused.
  EXPECT_EQ(UnpackAllreduceResume(packed, 3, 2).status().code(),
            absl::StatusCode::kInternal);
  std::vector<float> bad = packed;
  bad[5] = 0.5f;
  EXPECT_EQ(UnpackAllreduceResume(bad, 3, 3).status().code(),
            absl::StatusCode::kInternal);
}

TEST(AllreduceResume, EachRankStartsAtItsRecordedPositionOrSkipsTheSteps) {
  const AllreduceResume r = Example();
  RankInputStart s = InputStartFor(r, 0);
  EXPECT_EQ(s.at, (InputPosition{2, 1, 70000, 123456, 99999}));
  EXPECT_EQ(s.skip_batches, 0);
  s = InputStartFor(r, 2);
  EXPECT_EQ(s.at, (InputPosition{0, 3, 5, 6, -1}));
  EXPECT_EQ(s.skip_batches, 0);
  // Not recorded: the start, past one batch per restored step.
  for (int rank : {1, 3}) {
    s = InputStartFor(r, rank);
    EXPECT_EQ(s.at, InputPosition{});
    EXPECT_EQ(s.skip_batches, r.global_step);
    EXPECT_THAT(s.whence, HasSubstr("not recorded"));
  }
  // Nothing restored: every rank from the start.
  AllreduceResume fresh;
  s = InputStartFor(fresh, 1);
  EXPECT_EQ(s.at, InputPosition{});
  EXPECT_EQ(s.skip_batches, 0);
}

class AllreduceRestoreChiefTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StatusOr<std::string> path = testing::WriteExampleJob("titanic", dir_);
    ASSERT_TRUE(path.ok()) << path.status();
    StatusOr<JobFile> job = LoadJobFile(*path);
    ASSERT_TRUE(job.ok()) << job.status();
    job_ = *std::move(job);
    job_.train.output_dir = dir_.Join("out");
    options_.index = 0;
    options_.resume = true;
    options_.credentials.run_id = "run-a";
    hooks_.on_note = [this](std::string_view n) { notes_.emplace_back(n); };
  }

  struct Replica {
    std::unique_ptr<FeatureLayer> layer;
    std::unique_ptr<Model> model;
    std::vector<kernels::OptimizerState> states;
  };
  // The job's model, fresh; its variables all `fill` when given.
  Replica Fresh(std::optional<float> fill = std::nullopt) {
    Replica r;
    StatusOr<FeatureLayer> layer =
        FeatureLayer::Create(job_.schema, job_.features, *job_.model);
    EXPECT_TRUE(layer.ok()) << layer.status();
    r.layer = std::make_unique<FeatureLayer>(*std::move(layer));
    StatusOr<std::unique_ptr<Model>> model =
        Model::Create(*r.layer, *job_.model, uint64_t(job_.train.seed));
    EXPECT_TRUE(model.ok()) << model.status();
    r.model = *std::move(model);
    StatusOr<Optimizers> optimizers = MakeOptimizers(job_.train);
    EXPECT_TRUE(optimizers.ok()) << optimizers.status();
    r.states =
        NewOptimizerStates(*optimizers, *r.model, VariableShapes(*r.model));
    if (fill) {
      for (Variable& v : r.model->variables()) {
        for (float& x : v.value.span()) x = *fill;
      }
    }
    return r;
  }

  // Writes a checkpoint of `r` at step 40 as run `run_id` wrote it, with
  // worker:2's position recorded and worker:1's not.
  void WriteCheckpoint(Replica& r, const std::string& run_id,
                       const std::string& fingerprint) {
    for (kernels::OptimizerState& s : r.states) s.set_step(40);
    TrainState state;
    state.global_step = 40;
    state.position = InputPosition{1, 0, 12, 300};
    state.worker_positions = {InputPosition{1, 0, 12, 300}, std::nullopt,
                              InputPosition{1, 0, 14, 310}};
    const Bundle b = MakeCheckpoint(*r.layer, *r.model, r.states, state, "",
                                    {run_id, fingerprint});
    std::filesystem::create_directories(job_.train.output_dir);
    const Status written =
        WriteCheckpointGeneration(b, job_.train.output_dir, 40, 2);
    ASSERT_TRUE(written.ok()) << written;
  }

  dtf::testing::TempDir dir_;
  JobFile job_;
  WorkerOptions options_;
  TrainHooks hooks_;
  std::vector<std::string> notes_;
};

TEST_F(AllreduceRestoreChiefTest, RestoresTheRunsOwnCheckpoint) {
  Replica saved = Fresh(0.25f);
  WriteCheckpoint(saved, "run-a", CheckpointFingerprint(job_));
  Replica chief = Fresh();
  StatusOr<AllreduceResume> r =
      RestoreAllreduceChief(job_, options_, hooks_, chief.layer.get(),
                            chief.model.get(), &chief.states);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->restored);
  EXPECT_EQ(r->global_step, 40);
  ASSERT_EQ(r->update_counts.size(), chief.model->variables().size());
  for (size_t v = 0; v < chief.model->variables().size(); ++v) {
    const Variable& var = chief.model->variables()[v];
    for (float x : var.value.span()) ASSERT_EQ(x, 0.25f) << var.name;
    if (var.trainable) {
      EXPECT_EQ(r->update_counts[v], 40) << var.name;
    }
  }
  ASSERT_EQ(r->positions.size(), 3u);
  EXPECT_EQ(r->positions[0], (InputPosition{1, 0, 12, 300}));
  EXPECT_FALSE(r->positions[1].has_value());
  EXPECT_EQ(r->positions[2], (InputPosition{1, 0, 14, 310}));
  EXPECT_THAT(notes_, ::testing::Contains(HasSubstr("at global step 40")));
}

TEST_F(AllreduceRestoreChiefTest, AnotherRunsCheckpointIsNotRestored) {
  Replica saved = Fresh(0.25f);
  WriteCheckpoint(saved, "run-b", CheckpointFingerprint(job_));
  Replica chief = Fresh();
  const float before = chief.model->variables()[0].value.span()[0];
  StatusOr<AllreduceResume> r =
      RestoreAllreduceChief(job_, options_, hooks_, chief.layer.get(),
                            chief.model.get(), &chief.states);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->restored);
  EXPECT_EQ(r->global_step, 0);
  EXPECT_EQ(chief.model->variables()[0].value.span()[0], before);
  EXPECT_THAT(notes_, ::testing::Contains(HasSubstr(
                          "every worker starts from the initial values")));
}

TEST_F(AllreduceRestoreChiefTest, ACheckpointOfAnotherJobIsRefused) {
  Replica saved = Fresh(0.25f);
  WriteCheckpoint(saved, "run-a", "0123456789abcdef");
  Replica chief = Fresh();
  StatusOr<AllreduceResume> r =
      RestoreAllreduceChief(job_, options_, hooks_, chief.layer.get(),
                            chief.model.get(), &chief.states);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(Message(r.status())), HasSubstr("0123456789abcdef"));
}

// A rank whose position is not recorded skips the restored steps' batches
// from its input's start: with shuffling too, it then reads exactly the
// batch it would have read next (the order is a function of the seed).
TEST(SkipBatches, AFastForwardedRankReadsOnExactly) {
  dtf::testing::TempDir dir;
  StatusOr<std::string> path = testing::WriteExampleJob("titanic", dir);
  ASSERT_TRUE(path.ok()) << path.status();
  StatusOr<JobFile> job = testing::LoadJobWithRecords(*path);
  ASSERT_TRUE(job.ok()) << job.status();
  StatusOr<JobRecords> records = FindJobRecords(*job);
  ASSERT_TRUE(records.ok()) << records.status();
  StatusOr<FeatureLayer> layer =
      FeatureLayer::Create(job->schema, job->features, *job->model);
  ASSERT_TRUE(layer.ok()) << layer.status();
  InputPipelineOptions o;
  o.files = records->train;
  o.features = layer->ParseSpecs(/*with_label=*/true);
  o.batch_size = 16;
  o.epochs = -1;
  o.shuffle_buffer_size = 64;
  o.seed = 7;
  o.reader_index = 1;
  o.reader_count = 2;
  // Past an epoch's end: the skip crosses into the next epoch.
  constexpr int64_t kSteps = 40;
  StatusOr<std::unique_ptr<InputPipeline>> straight = InputPipeline::Create(o);
  ASSERT_TRUE(straight.ok()) << straight.status();
  Batch expected;
  for (int64_t i = 0; i <= kSteps; ++i) {
    StatusOr<bool> more = (*straight)->Next(&expected);
    ASSERT_TRUE(more.ok() && *more) << more.status();
  }
  StatusOr<std::unique_ptr<InputPipeline>> skipped = InputPipeline::Create(o);
  ASSERT_TRUE(skipped.ok()) << skipped.status();
  StatusOr<InputPosition> at = SkipBatches(**skipped, kSteps);
  ASSERT_TRUE(at.ok()) << at.status();
  EXPECT_GE(at->epoch, 1);
  Batch next;
  StatusOr<bool> more = (*skipped)->Next(&next);
  ASSERT_TRUE(more.ok() && *more) << more.status();
  ASSERT_EQ(next.rows, expected.rows);
  ASSERT_EQ(next.columns.size(), expected.columns.size());
  for (size_t c = 0; c < next.columns.size(); ++c) {
    EXPECT_EQ(next.columns[c].floats, expected.columns[c].floats)
        << next.columns[c].name;
    EXPECT_EQ(next.columns[c].int64s, expected.columns[c].int64s)
        << next.columns[c].name;
    EXPECT_EQ(next.columns[c].bytes, expected.columns[c].bytes)
        << next.columns[c].name;
  }
  EXPECT_EQ((*skipped)->position(), (*straight)->position());
}

}  // namespace
}  // namespace dtf::runtime
