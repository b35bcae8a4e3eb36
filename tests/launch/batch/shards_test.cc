// The split and merge behind `dtf predict --profile`
// (lib/launch/batch/shards.h).
#include "lib/launch/batch/shards.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/data/shard_assignment.h"

namespace dtf::launch {
namespace {

using ::testing::HasSubstr;

ShardOutput Shard(std::string name, std::string text, ShardIndex index) {
  return ShardOutput{std::move(name), std::move(text), std::move(index)};
}

TEST(PredictShards, PathsBesideTheOutput) {
  EXPECT_EQ(ShardOutputPath("/o/scores.csv", 1, 3),
            "/o/scores.csv.shard-1-of-3");
  EXPECT_EQ(ShardIndexPath("/o/scores.csv.shard-1-of-3"),
            "/o/scores.csv.shard-1-of-3.rows");
}

TEST(PredictShards, IndexRoundTrips) {
  ShardIndex index;
  index.rows = 7;
  index.files = {{1, 4}, {3, 3}};
  const std::string text = ShardIndexToText(index);
  EXPECT_EQ(text, "rows 7\nfile 1 4\nfile 3 3\n");
  StatusOr<ShardIndex> back = ShardIndexFromText(text, "x.rows");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->rows, 7);
  EXPECT_EQ(back->files, index.files);
}

TEST(PredictShards, IndexSaysItsInputCount) {
  ShardIndex index;
  index.rows = 2;
  index.inputs = 5;
  const std::string text = ShardIndexToText(index);
  EXPECT_EQ(text, "rows 2\ninputs 5\n");
  StatusOr<ShardIndex> back = ShardIndexFromText(text, "x.rows");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->inputs, 5);
  // Without the line: not said.
  back = ShardIndexFromText("rows 2\n", "x.rows");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->inputs, -1);
  EXPECT_FALSE(ShardIndexFromText("rows 2\ninputs 1\ninputs 1\n", "x").ok());
}

TEST(PredictShards, InputCountIsTheOneTheShardsAgreeOn) {
  ShardIndex a, b;
  a.inputs = b.inputs = 3;
  std::vector<ShardOutput> shards = {Shard("s0", "", a), Shard("s1", "", b)};
  StatusOr<int64_t> count = ShardInputCount(shards);
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(*count, 3);
  shards[1].index.inputs = 4;
  count = ShardInputCount(shards);
  ASSERT_FALSE(count.ok());
  EXPECT_EQ(count.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(Message(count.status()), HasSubstr("s1: it saw 4 input files, "
                                                 "s0 3"));
  shards[1].index.inputs = -1;
  EXPECT_THAT(Message(ShardInputCount(shards).status()),
              HasSubstr("s1: its index does not say"));
  // The merge checks the count it is given against every index.
  shards[1].index.inputs = 3;
  StatusOr<std::string> merged = MergeShardOutputs(shards, 2, false);
  ASSERT_FALSE(merged.ok());
  EXPECT_THAT(Message(merged.status()),
              HasSubstr("s0: it saw 3 input files where the merge has 2"));
}

TEST(PredictShards, FrameCarriesIndexAndOutput) {
  const std::string index = "rows 2\ninputs 1\n";
  const std::string output = "{\"a\":1}\n{\"a\":2}\n";
  const std::string frame = ShardFrame(index, output);
  StatusOr<ShardOutput> shard = ShardFromFrame(frame, "pod p:/work/x");
  ASSERT_TRUE(shard.ok()) << shard.status();
  EXPECT_EQ(shard->name, "pod p:/work/x");
  EXPECT_EQ(shard->text, output);
  EXPECT_EQ(shard->index.rows, 2);
  EXPECT_EQ(shard->index.inputs, 1);
  // Cut short, one byte more, or not a frame at all: DataLoss naming it.
  for (const std::string& bad :
       {frame.substr(0, frame.size() - 1), frame + "x",
        std::string("error: pod not found\n"), std::string()}) {
    StatusOr<ShardOutput> b = ShardFromFrame(bad, "pod p:/work/x");
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_EQ(b.status().code(), StatusCode::kDataLoss);
    EXPECT_THAT(Message(b.status()), HasSubstr("pod p:/work/x: "));
  }
  EXPECT_THAT(
      Message(ShardFromFrame(frame.substr(0, frame.size() - 3), "f").status()),
      HasSubstr("cut short"));
}

TEST(PredictShards, BadIndexNamesFileAndLine) {
  StatusOr<ShardIndex> bad = ShardIndexFromText("rows 3\nfile 1 x\n", "s.rows");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(Message(bad.status()), HasSubstr("s.rows:2: not a shard index"));
  bad = ShardIndexFromText("file 0 3\n", "t.rows");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(Message(bad.status()),
              HasSubstr("t.rows: a shard index without"));
}

TEST(PredictShards, CsvRowMayHoldQuotedNewlines) {
  const std::string text = "a,\"x\ny\",1\nb,\"q\"\"\n\",2\nc,3";
  size_t end = ShardRowEnd(text, 0, /*csv=*/true);
  EXPECT_EQ(text.substr(0, end), "a,\"x\ny\",1\n");
  size_t next = ShardRowEnd(text, end, true);
  EXPECT_EQ(text.substr(end, next - end), "b,\"q\"\"\n\",2\n");
  EXPECT_EQ(ShardRowEnd(text, next, true), text.size());
  // JSON lines end at every newline.
  EXPECT_EQ(ShardRowEnd("{\"a\":1}\n{}\n", 0, false), 8u);
}

// Whole files: 5 files over 2 shards (0, 2, 4 and 1, 3) come back in file
// order, the CSV header once.
TEST(PredictShards, MergesWholeFilesInFileOrder) {
  ShardIndex i0{3, {{0, 1}, {2, 2}, {4, 0}}};
  ShardIndex i1{2, {{1, 1}, {3, 1}}};
  std::vector<ShardOutput> shards = {Shard("s0", "h\nf0a\nf2a\nf2b\n", i0),
                                     Shard("s1", "h\nf1a\n\"f3\na\"\n", i1)};
  StatusOr<std::string> merged = MergeShardOutputs(shards, 5, /*csv=*/true);
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(*merged, "h\nf0a\nf1a\nf2a\nf2b\n\"f3\na\"\n");
}

// Records: 2 files (fewer than 3 shards) give row j to shard j % 3, as the
// input pipeline's rule does.
TEST(PredictShards, MergesRecordsRoundRobin) {
  std::vector<std::string> rows;
  for (int j = 0; j < 8; ++j) rows.push_back(StrCat("{\"r\":", j, "}\n"));
  std::vector<ShardOutput> shards;
  for (int k = 0; k < 3; ++k) {
    StatusOr<ShardAssignment> a = AssignShard(2, k, 3);
    ASSERT_TRUE(a.ok());
    ASSERT_FALSE(a->whole_files());
    ShardOutput s;
    s.name = StrCat("s", k);
    for (int j = 0; j < 8; ++j) {
      if (a->Keeps(j)) {
        s.text += rows[size_t(j)];
        ++s.index.rows;
      }
    }
    shards.push_back(s);
  }
  StatusOr<std::string> merged = MergeShardOutputs(shards, 2, false);
  ASSERT_TRUE(merged.ok()) << merged.status();
  std::string want;
  for (const std::string& r : rows) want += r;
  EXPECT_EQ(*merged, want);
}

TEST(PredictShards, MismatchNamesTheShard) {
  // An index promising more rows than the output holds.
  std::vector<ShardOutput> shards = {Shard("s0", "a\n", {2, {{0, 2}}}),
                                     Shard("s1", "b\n", {1, {{1, 1}}})};
  StatusOr<std::string> merged = MergeShardOutputs(shards, 2, false);
  ASSERT_FALSE(merged.ok());
  EXPECT_EQ(merged.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(Message(merged.status()), HasSubstr("s0: fewer rows"));
  // A file the rule gives another shard.
  shards = {Shard("s0", "a\n", {1, {{1, 1}}}),
            Shard("s1", "b\n", {1, {{0, 1}}})};
  merged = MergeShardOutputs(shards, 2, false);
  ASSERT_FALSE(merged.ok());
  EXPECT_THAT(Message(merged.status()),
              HasSubstr("s0: its index does not list input file 0"));
  // Rows left over in a shard.
  shards = {Shard("s0", "a\n", {1, {}}), Shard("s1", "b\nc\n", {2, {}})};
  merged = MergeShardOutputs(shards, 1, false);
  ASSERT_FALSE(merged.ok());
  EXPECT_THAT(Message(merged.status()), HasSubstr("s1: more rows than merged"));
  // Different CSV headers.
  shards = {Shard("s0", "h\na\n", {1, {}}), Shard("s1", "g\nb\n", {1, {}})};
  merged = MergeShardOutputs(shards, 1, true);
  ASSERT_FALSE(merged.ok());
  EXPECT_THAT(Message(merged.status()), HasSubstr("s1: its CSV header"));
}

}  // namespace
}  // namespace dtf::launch
