// A worker's input as input shards (lib/runtime/train/sharded_input.h):
// its own, and the shards the chief hands on to it, a batch of each in
// turn; a shard it no longer lists is dropped, one read to its end is not
// read again.
#include "lib/runtime/train/sharded_input.h"

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/runtime/train/job_records.h"
#include "tests/runtime/runtime_testing.h"
#include "tests/testing/temp_dir.h"

namespace dtf::runtime {
namespace {

class ShardedInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StatusOr<std::string> path = testing::WriteExampleJob("titanic", dir_);
    ASSERT_TRUE(path.ok()) << path.status();
    StatusOr<JobFile> job = testing::LoadJobWithRecords(*path);
    ASSERT_TRUE(job.ok()) << job.status();
    StatusOr<JobRecords> records = FindJobRecords(*job);
    ASSERT_TRUE(records.ok()) << records.status();
    options_.files = records->train;
    options_.features = {FixedLenFeature("Age", FeatureType::kFloat)};
    options_.batch_size = 32;
    options_.epochs = 1;
    options_.reader_count = 3;
  }

  std::unique_ptr<InputPipeline> Open(int shard, const InputPosition& at) {
    InputPipelineOptions o = options_;
    o.reader_index = shard;
    o.start = at;
    StatusOr<std::unique_ptr<InputPipeline>> p = InputPipeline::Create(o);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *std::move(p) : nullptr;
  }

  // Worker 0's input over `own`: the shards `*assigned` lists, opened
  // from this fixture's records (counted in `*opened`), and the ones it
  // releases said in `*released`.
  std::unique_ptr<ShardedInput> Follow(
      InputPipeline& own,
      const std::optional<std::vector<InputShard>>* assigned,
      std::vector<InputShard>* released, int* opened = nullptr) {
    return std::make_unique<ShardedInput>(
        own, 0,
        [this, opened](int shard, const InputPosition& at) {
          if (opened != nullptr) ++*opened;
          InputPipelineOptions o = options_;
          o.reader_index = shard;
          o.start = at;
          return InputPipeline::Create(o);
        },
        [assigned] {
          return AssignedShards{*assigned, false};
        },
        [released](int shard, const InputPosition& at) {
          released->push_back({shard, at});
        });
  }

  dtf::testing::TempDir dir_{"dtf_sharded_input_test"};
  InputPipelineOptions options_;
};

TEST_F(ShardedInputTest, ReadsTheShardsItIsGivenInTurn) {
  std::unique_ptr<InputPipeline> own = Open(0, {});
  std::optional<std::vector<InputShard>> assigned;
  int opened = 0;
  ShardedInput input(
      *own, 0,
      [&](int shard, const InputPosition& at) {
        ++opened;
        return InputPipeline::Create([&] {
          InputPipelineOptions o = options_;
          o.reader_index = shard;
          o.start = at;
          return o;
        }());
      },
      [&] {
        return AssignedShards{assigned, false};
      });
  Batch batch;
  int shard = 0;
  InputPosition at;
  // Nothing handed on: its own shard.
  ASSERT_TRUE(*input.Next(&batch, &shard, &at));
  EXPECT_EQ(shard, -1);
  EXPECT_EQ(at, own->position());
  EXPECT_FALSE(input.HasNew());

  // Shard 2 handed on, to read from where a batch of it left it.
  std::unique_ptr<InputPipeline> reference = Open(2, {});
  Batch first;
  ASSERT_TRUE(*reference->Next(&first));
  const InputPosition from = reference->position();
  assigned = std::vector<InputShard>{{0, {}}, {2, from}};
  EXPECT_TRUE(input.HasNew());
  ASSERT_TRUE(*input.Next(&batch, &shard, &at));
  const int first_of_turn = shard;
  ASSERT_TRUE(*input.Next(&batch, &shard, &at));
  EXPECT_NE(shard, first_of_turn) << "the shards take turns";
  EXPECT_EQ(opened, 1);
  EXPECT_FALSE(input.HasNew());

  // Its own shard no longer listed (handed on while this worker was taken
  // for dead): shard 2 alone, batch for batch as the reference reads it.
  assigned = std::vector<InputShard>{{2, from}};
  Batch expected;
  // The reference catches up with what shard 2 yielded so far.
  int64_t read = 0;
  std::vector<int> shards;
  while (*input.Next(&batch, &shard, &at)) {
    shards.push_back(shard);
    ++read;
  }
  EXPECT_THAT(shards, ::testing::Each(2));
  int64_t left = 0;
  while (*reference->Next(&expected)) ++left;
  // The two batches of shard 2 read while it took turns, then the rest.
  EXPECT_EQ(read + 1, left);
  EXPECT_EQ(at, reference->position()) << "shard 2's end";
  EXPECT_EQ(input.ended(), 1);
  EXPECT_EQ(input.taken(), 1);
  // Read to its end here: not read again; a shard new to it is.
  EXPECT_FALSE(input.HasNew());
  assigned = std::vector<InputShard>{{2, from}, {1, {}}};
  EXPECT_TRUE(input.HasNew());
  ASSERT_TRUE(*input.Next(&batch, &shard, &at));
  EXPECT_EQ(shard, 1);
}

// The chief asks back a shard this worker read to its end (it does not
// know it ended): released at its end, once, so that the worker it goes
// to reads nothing of it; a shard dropped while it is read is released at
// the position after its last batch read.
TEST_F(ShardedInputTest, AShardIsReleasedWhereItsReadingStopped) {
  std::unique_ptr<InputPipeline> own = Open(0, {});
  // Shard 2 from its last batch: it ends after one batch here.
  std::unique_ptr<InputPipeline> reference = Open(2, {});
  Batch batch;
  int64_t batches = 0;
  while (*reference->Next(&batch)) ++batches;
  const InputPosition end = reference->position();
  reference = Open(2, {});
  for (int64_t i = 0; i + 1 < batches; ++i)
    ASSERT_TRUE(*reference->Next(&batch));
  const InputPosition last = reference->position();
  std::optional<std::vector<InputShard>> assigned =
      std::vector<InputShard>{{0, {}}, {1, {}}, {2, last}};
  std::vector<InputShard> released;
  std::unique_ptr<ShardedInput> sharded = Follow(*own, &assigned, &released);
  ShardedInput& input = *sharded;
  int shard = 0;
  InputPosition at;
  // Own, shard 1, shard 2 (its last batch), own, shard 1, then shard 2
  // ends and the others go on.
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(*input.Next(&batch, &shard, &at));
  EXPECT_EQ(input.ended(), 1);
  EXPECT_TRUE(released.empty());
  // Shards 1 and 2 asked back: 1 where its reading stopped, 2 at its end.
  assigned = std::vector<InputShard>{{0, {}}};
  ASSERT_TRUE(*input.Next(&batch, &shard, &at));
  EXPECT_EQ(shard, -1);
  ASSERT_EQ(released.size(), 2u);
  EXPECT_EQ(released[0].shard, 1);
  EXPECT_EQ(released[1], (InputShard{2, end}));
  ASSERT_TRUE(*input.Next(&batch, &shard, &at));
  EXPECT_EQ(released.size(), 2u) << "said once";
}

// The chief handed a shard on and back (another grant) between two looks
// of this worker: it reads on from the listed start, not from where its
// pipeline was (that stretch another worker read), and says no release
// (the chief asked none of it). Its own shard as a shard taken over, and
// one read to its end here, alike.
TEST_F(ShardedInputTest, AShardHandedOnAndBackUnseenIsReadFromTheListedStart) {
  std::unique_ptr<InputPipeline> own = Open(0, {});
  std::optional<std::vector<InputShard>> assigned;
  std::vector<InputShard> released;
  int opened = 0;
  std::unique_ptr<ShardedInput> sharded =
      Follow(*own, &assigned, &released, &opened);
  ShardedInput& input = *sharded;
  Batch batch;
  int shard = 0;
  InputPosition at;
  ASSERT_TRUE(*input.Next(&batch, &shard, &at));
  // Another worker read shard 0 on for 4 batches, and gave it back.
  std::unique_ptr<InputPipeline> reference = Open(0, {});
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(*reference->Next(&batch));
  const InputPosition back = reference->position();
  ASSERT_TRUE(*reference->Next(&batch));
  assigned = std::vector<InputShard>{{0, back, 2}};
  ASSERT_TRUE(*input.Next(&batch, &shard, &at));
  EXPECT_EQ(shard, -1);
  EXPECT_EQ(at, reference->position()) << "read on from the listed start";
  EXPECT_EQ(opened, 1);
  // Listed again under the same grant: read on where it is.
  ASSERT_TRUE(*input.Next(&batch, &shard, &at));
  ASSERT_TRUE(*reference->Next(&batch));
  EXPECT_EQ(at, reference->position());
  EXPECT_EQ(opened, 1);

  // Shard 2 taken over, read to its end; listed anew under another grant
  // from its last batch: that batch is read again (it was read here, but
  // the chief hands on from what was committed).
  std::unique_ptr<InputPipeline> other = Open(2, {});
  int64_t batches = 0;
  while (*other->Next(&batch)) ++batches;
  other = Open(2, {});
  for (int64_t i = 0; i + 1 < batches; ++i) ASSERT_TRUE(*other->Next(&batch));
  const InputPosition last = other->position();
  assigned = std::vector<InputShard>{{0, back, 2}, {2, {}, 1}};
  int64_t of_two = 0;
  while (*input.Next(&batch, &shard, &at)) of_two += shard == 2 ? 1 : 0;
  EXPECT_EQ(of_two, batches);
  EXPECT_FALSE(input.HasNew()) << "read to its end";
  assigned = std::vector<InputShard>{{0, back, 2}, {2, last, 4}};
  EXPECT_TRUE(input.HasNew());
  ASSERT_TRUE(*input.Next(&batch, &shard, &at));
  EXPECT_EQ(shard, 2);
  ASSERT_TRUE(*other->Next(&batch));
  EXPECT_EQ(at, other->position()) << "its last batch";
  EXPECT_FALSE(*input.Next(&batch, &shard, &at)) << "once";
  EXPECT_EQ(opened, 3);
  EXPECT_TRUE(released.empty());
}

// A worker with no shard waits for one being released to it, but not once
// the task is being stopped: the release may never come (its holder
// stopped too, or blocked on this worker's steps), and Next ends its input
// at once instead of holding the stop up.
TEST_F(ShardedInputTest, AWaitForAReleaseEndsWhenTheTaskStops) {
  std::unique_ptr<InputPipeline> own = Open(0, {});
  int looks = 0;
  bool stopping = false;
  ShardedInput input(
      *own, 0,
      [&](int shard, const InputPosition& at) {
        InputPipelineOptions o = options_;
        o.reader_index = shard;
        o.start = at;
        return InputPipeline::Create(o);
      },
      [&] {
        // Its own shard handed on; one being released to it for 5 s.
        ++looks;
        if (looks == 3) stopping = true;
        return AssignedShards{std::vector<InputShard>{}, looks < 50};
      },
      nullptr, [&] { return stopping; });
  Batch batch;
  int shard = 0;
  InputPosition at;
  const auto before = std::chrono::steady_clock::now();
  StatusOr<bool> more = input.Next(&batch, &shard, &at);
  ASSERT_TRUE(more.ok()) << more.status();
  EXPECT_FALSE(*more);
  EXPECT_EQ(looks, 3) << "the stop is looked at with each wait";
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(2));
}

}  // namespace
}  // namespace dtf::runtime
