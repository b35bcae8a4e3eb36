// The split and merge behind `dtf predict --profile` (cmd/predict_shards.h).
#include "cmd/predict_shards.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/data/shard_assignment.h"

namespace dtf::cli {
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
  size_t end = PredictRowEnd(text, 0, /*csv=*/true);
  EXPECT_EQ(text.substr(0, end), "a,\"x\ny\",1\n");
  size_t next = PredictRowEnd(text, end, true);
  EXPECT_EQ(text.substr(end, next - end), "b,\"q\"\"\n\",2\n");
  EXPECT_EQ(PredictRowEnd(text, next, true), text.size());
  // JSON lines end at every newline.
  EXPECT_EQ(PredictRowEnd("{\"a\":1}\n{}\n", 0, false), 8u);
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
}  // namespace dtf::cli
