#include "lib/runtime/train/allreduce_layout.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dtf::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(AllreduceLayout, EverySlotReadsItsOwnShard) {
  for (int w = 0; w < 3; ++w) {
    StatusOr<AllreduceLayout> l = LayoutAllreduce(w, 3, {});
    ASSERT_TRUE(l.ok()) << l.status();
    EXPECT_EQ(l->rank, w);
    EXPECT_EQ(l->size, 3);
    EXPECT_THAT(l->shards, ElementsAre(w));
  }
}

// The shards of the slots not taking part are dealt from the last rank
// towards the chief: every shard is read by exactly one rank.
TEST(AllreduceLayout, TheShardsOfSlotsNotTakingPartAreDealtOut) {
  StatusOr<AllreduceLayout> chief = LayoutAllreduce(0, 3, {0, 2});
  StatusOr<AllreduceLayout> two = LayoutAllreduce(2, 3, {0, 2});
  ASSERT_TRUE(chief.ok() && two.ok());
  EXPECT_EQ(chief->rank, 0);
  EXPECT_EQ(two->rank, 1);
  EXPECT_EQ(two->size, 2);
  EXPECT_THAT(chief->shards, ElementsAre(0));
  EXPECT_THAT(two->shards, ElementsAre(2, 1));

  const std::vector<int> members = {0, 3, 5};
  std::vector<int> readers(8, 0);
  std::vector<int> counts;
  for (const int m : members) {
    StatusOr<AllreduceLayout> l = LayoutAllreduce(m, 8, members);
    ASSERT_TRUE(l.ok()) << l.status();
    EXPECT_EQ(l->shards.front(), m);
    counts.push_back(int(l->shards.size()));
    for (const int s : l->shards) ++readers[size_t(s)];
  }
  EXPECT_THAT(readers, ElementsAre(1, 1, 1, 1, 1, 1, 1, 1));
  // 5 shards dealt: ranks 2 and 1 get two each, the chief one.
  EXPECT_THAT(counts, ElementsAre(2, 3, 3));
}

TEST(AllreduceLayout, BadMembersAreRefusedNamingTheFlag) {
  const auto why = [](int index, std::vector<int> members) {
    return std::string(Message(LayoutAllreduce(index, 3, members).status()));
  };
  EXPECT_THAT(why(1, {1, 2}), HasSubstr("--members 1,2: the chief, worker 0, "
                                        "must take part (the run has 3 worker "
                                        "slots)"));
  EXPECT_THAT(why(0, {0, 3}), HasSubstr("a worker index past the slots"));
  EXPECT_THAT(why(0, {0, 2, 1}), HasSubstr("ascending, each once"));
  EXPECT_THAT(why(0, {0, 2, 2}), HasSubstr("ascending, each once"));
  EXPECT_THAT(why(1, {0, 2}), HasSubstr("worker 1 is not among them"));
}

TEST(AllreduceLayout, StartedMembersAreTheFirstSlots) {
  EXPECT_THAT(StartedMembers(4, 0), ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(StartedMembers(4, 2), ElementsAre(0, 1));
  EXPECT_EQ(MembersText({0, 2, 3}), "0,2,3");
}

}  // namespace
}  // namespace dtf::runtime
