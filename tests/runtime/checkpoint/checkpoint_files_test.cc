// Checkpoints tied to their run: the job fingerprint, generations kept and
// pruned, and which checkpoint a task of a run may restore.
#include "lib/runtime/checkpoint/checkpoint_files.h"

#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/runtime/checkpoint/checkpoint.h"
#include "tests/runtime/runtime_testing.h"
#include "tests/testing/temp_dir.h"

namespace dtf::runtime {
namespace {

namespace fs = std::filesystem;

class CheckpointFilesTest : public ::testing::Test {
 protected:
  JobFile Job(
      std::initializer_list<std::pair<std::string_view, std::string_view>>
          edits = {}) {
    StatusOr<std::string> path =
        testing::WriteExampleJob("titanic", dir_, edits);
    EXPECT_TRUE(path.ok()) << path.status();
    StatusOr<JobFile> job = LoadJobFile(*path);
    EXPECT_TRUE(job.ok()) << job.status();
    return *std::move(job);
  }

  // A checkpoint's bookkeeping entries (no variables: what these tests
  // read).
  static Bundle Checkpoint(const std::string& run_id,
                           const std::string& fingerprint, int64_t step) {
    Bundle b;
    b.AddString(std::string(kCheckpointRunIdEntry), run_id);
    b.AddString(std::string(kCheckpointFingerprintEntry), fingerprint);
    b.AddInt64s("train/global_step", std::vector<int64_t>{step});
    b.AddInt64s("train/input_position", std::vector<int64_t>{1, 0, 7, 70});
    b.AddInt64s(std::string(kCheckpointPsStepsEntry),
                std::vector<int64_t>{step, step});
    return b;
  }

  std::string Out() const { return dir_.Join("out"); }

  dtf::testing::TempDir dir_;
};

// Every worker's input position: the chief's, another's, one not known;
// the records each had yielded of its epoch, where the checkpoint holds
// them (-1 in one of an earlier dtf); a malformed entry is DataLoss naming
// the file.
TEST_F(CheckpointFilesTest, WorkerPositionsAreReadBack) {
  Bundle b = Checkpoint("run-a", "f", 10);
  b.AddInt64s(std::string(kCheckpointWorkerPositionsEntry),
              std::vector<int64_t>{1, 0, 7, 70, 2, 1, 3, 90, -1, -1, -1, -1});
  const std::string path = dir_.Join("c.dtf");
  ASSERT_TRUE(b.WriteFile(path).ok());
  StatusOr<Bundle> read = Bundle::ReadFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  StatusOr<CheckpointInfo> info = ReadCheckpointInfo(*read);
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->worker_positions.size(), 3u);
  EXPECT_EQ(info->worker_positions[0], (InputPosition{1, 0, 7, 70, -1}));
  EXPECT_EQ(info->worker_positions[1], (InputPosition{2, 1, 3, 90, -1}));
  EXPECT_FALSE(info->worker_positions[2].has_value());
  EXPECT_EQ(info->position, (InputPosition{1, 0, 7, 70, -1}));

  b.AddInt64s(std::string(kCheckpointWorkerEmittedEntry),
              std::vector<int64_t>{33, 17, -1});
  b.AddInt64s(std::string(kCheckpointInputEmittedEntry),
              std::vector<int64_t>{33});
  ASSERT_TRUE(b.WriteFile(path).ok());
  read = Bundle::ReadFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  info = ReadCheckpointInfo(*read);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->worker_positions[0], (InputPosition{1, 0, 7, 70, 33}));
  EXPECT_EQ(info->worker_positions[1], (InputPosition{2, 1, 3, 90, 17}));
  EXPECT_FALSE(info->worker_positions[2].has_value());
  EXPECT_EQ(info->position, (InputPosition{1, 0, 7, 70, 33}));

  const std::vector<int64_t> four = {1, 0, 7, 70, 2, 1, 3, 90};
  for (const auto& [positions, emitted] :
       std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
           {{1, 0, 7}, {}},
           {{1, -1, 7, 70}, {}},
           {four, {5}},
           {four, {5, -2}}}) {
    Bundle m = Checkpoint("run-a", "f", 10);
    m.AddInt64s(std::string(kCheckpointWorkerPositionsEntry), positions);
    if (!emitted.empty()) {
      m.AddInt64s(std::string(kCheckpointWorkerEmittedEntry), emitted);
    }
    ASSERT_TRUE(m.WriteFile(path).ok());
    read = Bundle::ReadFile(path);
    ASSERT_TRUE(read.ok()) << read.status();
    info = ReadCheckpointInfo(*read);
    EXPECT_EQ(info.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_NE(Message(info.status()).find(path), std::string::npos)
        << info.status();
  }
}

TEST_F(CheckpointFilesTest, FingerprintFollowsWhatGivesTheVariablesMeaning) {
  const std::string base = CheckpointFingerprint(Job());
  EXPECT_EQ(base.size(), 16u);
  EXPECT_EQ(CheckpointFingerprint(Job()), base);
  // Not what a run may change and go on with.
  EXPECT_EQ(CheckpointFingerprint(Job({{"epochs = 20", "epochs = 3"},
                                       {"batch_size = 32", "batch_size = 8"}})),
            base);
  // The model, the features and the schema.
  EXPECT_NE(CheckpointFingerprint(Job({{"hidden = [128]", "hidden = [64]"}})),
            base);
  EXPECT_NE(CheckpointFingerprint(Job({{"buckets = 10\nembedding = 10",
                                        "buckets = 20\nembedding = 10"}})),
            base);
  // The optimizers' slots.
  EXPECT_NE(
      CheckpointFingerprint(Job({{"type = \"adagrad\"", "type = \"adam\""}})),
      base);
  // Not its learning rate.
  EXPECT_EQ(CheckpointFingerprint(
                Job({{"learning_rate = 0.05", "learning_rate = 0.01"}})),
            base);
}

TEST_F(CheckpointFilesTest,
       GenerationsArePrunedToKeepAndTheNewestIsTheCheckpoint) {
  fs::create_directories(Out());
  for (int64_t step : {100, 200, 300, 400, 500}) {
    ASSERT_TRUE(
        WriteCheckpointGeneration(Checkpoint("r1", "f", step), Out(), step, 3)
            .ok());
  }
  std::vector<CheckpointGeneration> kept = ListCheckpointGenerations(Out());
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[0].step, 500);
  EXPECT_EQ(kept[1].step, 400);
  EXPECT_EQ(kept[2].step, 300);
  EXPECT_FALSE(fs::exists(fs::path(Out()) / "checkpoint-100.dtf"));
  EXPECT_FALSE(fs::exists(fs::path(Out()) / "checkpoint-200.dtf"));
  EXPECT_TRUE(fs::exists(fs::path(Out()) / "checkpoint-500.dtf"));
  StatusOr<Bundle> newest =
      Bundle::ReadFile((fs::path(Out()) / kCheckpointFile).string());
  ASSERT_TRUE(newest.ok()) << newest.status();
  StatusOr<CheckpointInfo> info = ReadCheckpointInfo(*newest);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->global_step, 500);
  EXPECT_EQ(info->run_id, "r1");
  EXPECT_EQ(info->ps_steps, (std::vector<int64_t>{500, 500}));
  EXPECT_EQ(info->position, (InputPosition{1, 0, 7, 70, -1}));
  // Nothing else is left behind (no temporary files, no link).
  int files = 0;
  for (const auto& e : fs::directory_iterator(Out())) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 4);
  // keep = 1 leaves the newest only.
  ASSERT_TRUE(
      WriteCheckpointGeneration(Checkpoint("r1", "f", 600), Out(), 600, 1)
          .ok());
  kept = ListCheckpointGenerations(Out());
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].step, 600);
}

// A checkpoint an earlier run left in the output directory is not this
// run's: a restarted task does not restore it.
TEST_F(CheckpointFilesTest, AnotherRunsCheckpointIsNotRestored) {
  fs::create_directories(Out());
  ASSERT_TRUE(WriteCheckpointGeneration(Checkpoint("old-run", "f", 3125), Out(),
                                        3125, 3)
                  .ok());
  std::string why;
  StatusOr<std::optional<Bundle>> found =
      FindRunCheckpoint(Out(), "new-run", "f", &why);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_FALSE(found->has_value());
  EXPECT_NE(why.find("belongs to run old-run, not to run new-run"),
            std::string::npos)
      << why;
  found = FindRunCheckpoint(Out(), "old-run", "f", &why);
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->path(), (fs::path(Out()) / kCheckpointFile).string());
  // An empty directory has none.
  found = FindRunCheckpoint(dir_.Join("nowhere"), "new-run", "f", &why);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_FALSE(found->has_value());
}

TEST_F(CheckpointFilesTest, ATamperedCheckpointIsAnErrorNamingTheFile) {
  fs::create_directories(Out());
  ASSERT_TRUE(
      WriteCheckpointGeneration(Checkpoint("r1", "f", 100), Out(), 100, 3)
          .ok());
  const std::string path = (fs::path(Out()) / kCheckpointFile).string();
  std::string bytes = dtf::testing::ReadFile(path);
  ASSERT_GT(bytes.size(), 40u);
  bytes[30] ^= 0x01;
  fs::remove(path);  // a file of its own, not the generation's link
  dtf::testing::WriteFile(path, bytes);
  std::string why;
  StatusOr<std::optional<Bundle>> found =
      FindRunCheckpoint(Out(), "r1", "f", &why);
  ASSERT_EQ(found.status().code(), absl::StatusCode::kDataLoss)
      << found.status();
  EXPECT_NE(Message(found.status()).find(path), std::string::npos)
      << found.status();
  // Nothing was changed.
  EXPECT_EQ(dtf::testing::ReadFile(path), bytes);
}

TEST_F(CheckpointFilesTest, TheRunsCheckpointOfAnotherJobIsRefused) {
  fs::create_directories(Out());
  ASSERT_TRUE(
      WriteCheckpointGeneration(Checkpoint("r1", "aaaa", 100), Out(), 100, 3)
          .ok());
  std::string why;
  StatusOr<std::optional<Bundle>> found =
      FindRunCheckpoint(Out(), "r1", "bbbb", &why);
  ASSERT_EQ(found.status().code(), absl::StatusCode::kFailedPrecondition)
      << found.status();
  const std::string message(Message(found.status()));
  EXPECT_NE(message.find((fs::path(Out()) / kCheckpointFile).string()),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("aaaa"), std::string::npos) << message;
  EXPECT_NE(message.find("bbbb"), std::string::npos) << message;
}

}  // namespace
}  // namespace dtf::runtime
