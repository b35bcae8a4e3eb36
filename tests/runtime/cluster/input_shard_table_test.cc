// Which worker reads each input shard (lib/runtime/cluster/
// input_shard_table.h): its own until handed on, and what each process of
// a worker is told it reads.
#include "lib/runtime/cluster/input_shard_table.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dtf::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(InputShardTable, EachWorkerReadsItsOwnUntilAShardIsHandedOn) {
  InputShardTable table(3);
  for (int w = 0; w < 3; ++w) {
    EXPECT_EQ(table.holder(w), w);
    EXPECT_EQ(table.held(w), 1);
    EXPECT_FALSE(table.moved(w));
    EXPECT_EQ(table.Of(w, 7), std::nullopt) << "nothing moved: told nothing";
  }
  const InputPosition at{3, 0, 90, 90};
  table.Orphan(2);
  EXPECT_EQ(table.holder(2), -1);
  // Worker 2's next process reads nothing: its shard is no longer its.
  ASSERT_TRUE(table.Of(2, 9).has_value());
  EXPECT_THAT(*table.Of(2, 9), IsEmpty());
  table.Give(2, 1, /*incarnation=*/11, at);
  EXPECT_EQ(table.holder(2), 1);
  EXPECT_EQ(table.held(1), 2);
  EXPECT_EQ(table.incarnation(2), 11u);
  // Its first handing (grant 1); the own shard never handed on (0).
  EXPECT_THAT(*table.Of(1, 11),
              ElementsAre(InputShard{1, {}}, InputShard{2, at, 1}));
  // Another process of worker 1 (a restart) reads its own; shard 2 went
  // with the process it was handed to.
  EXPECT_THAT(*table.Of(1, 12), ElementsAre(InputShard{1, {}}));
  // Any process (the chief's own view).
  EXPECT_THAT(*table.Of(1, 0),
              ElementsAre(InputShard{1, {}}, InputShard{2, at, 1}));
  EXPECT_EQ(table.Of(0, 5), std::nullopt);
  EXPECT_EQ(table.Of(3, 5), std::nullopt) << "no such worker";
}

// A worker back with no shard (its own was handed on while it was taken
// for dead) gets one released to it: the holder is told it reads it no
// more, and the shard is the returning worker's from where the holder
// stopped.
TEST(InputShardTable, AShardIsReleasedToAWorkerThatReadsNone) {
  InputShardTable table(3);
  const InputPosition at{3, 0, 90, 90};
  table.Orphan(2);
  table.Give(2, 0, /*incarnation=*/0, at);
  EXPECT_FALSE(table.Pending(2, 9));
  table.Release(2, 2, 9);
  EXPECT_TRUE(table.releasing(2));
  EXPECT_TRUE(table.Pending(2, 9));
  EXPECT_TRUE(table.Pending(2, 0));
  EXPECT_FALSE(table.Pending(2, 8)) << "another process of worker 2";
  EXPECT_THAT(*table.Of(0, 0), ElementsAre(InputShard{0, {}}))
      << "the holder reads it no more";
  EXPECT_THAT(*table.Of(2, 9), IsEmpty());
  const InputPosition stopped{4, 0, 12, 12};
  EXPECT_FALSE(table.Released(2, 1, stopped)) << "not worker 1's to release";
  EXPECT_TRUE(table.Released(2, 0, stopped));
  EXPECT_FALSE(table.releasing(2));
  EXPECT_FALSE(table.Pending(2, 9));
  EXPECT_EQ(table.holder(2), 2);
  // Handed back under a grant of its own: the worker reads on from
  // `stopped` even where it never saw the shard leave.
  EXPECT_THAT(*table.Of(2, 9), ElementsAre(InputShard{2, stopped, 2}));
  EXPECT_FALSE(table.Released(2, 0, stopped)) << "once";
}

}  // namespace
}  // namespace dtf::runtime
