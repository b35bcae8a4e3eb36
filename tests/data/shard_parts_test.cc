#include "lib/data/shard_parts.h"

#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/data/gen_records.h"
#include "lib/data/shard_files.h"
#include "tests/testing/paths.h"
#include "tests/testing/temp_dir.h"

namespace dtf {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// The Titanic CSV (a header line, quoted names with commas) split 80/20.
GenRecordsOptions Titanic(const std::string& out) {
  static const std::string kCsv =
      std::string(DTF_SHARED_DIR) + "/data/titanic/train.csv";
  GenRecordsOptions o;
  o.inputs.push_back(kCsv);
  o.out_dir = out;
  o.shards = 3;
  o.splits = {{"train", 0.8}, {"eval", 0.2}};
  o.write_index = true;
  o.infer_label = "Survived";
  return o;
}

// Every file of `dir`'s split directories, by relative path, with its bytes.
std::vector<std::pair<std::string, std::string>> Files(const std::string& dir) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const char* split : {"train", "eval"}) {
    for (const std::string& f : ExistingShardFiles(dir + "/" + split)) {
      out.emplace_back(
          std::string(split) + "/" + fs::path(f).filename().string(),
          testing::ReadFile(f));
    }
  }
  return out;
}

class ShardPartsTest : public ::testing::Test {
 protected:
  // Part k of `parts` converted into <temp>/part-k, as a task does.
  ShardPartsRun Parts(int parts, const std::string& out) {
    ShardPartsRun run;
    run.out_dir = out;
    run.splits = {"train", "eval"};
    for (int k = 0; k < parts; ++k) {
      GenRecordsOptions o = Titanic(temp_.Join("part-" + std::to_string(k)));
      o.part = k;
      o.parts = parts;
      StatusOr<GenRecordsResult> r = GenRecords(o);
      EXPECT_TRUE(r.ok()) << r.status();
      run.part_dirs.push_back(o.out_dir);
    }
    return run;
  }

  testing::TempDir temp_{"dtf_shard_parts_test"};
};

// Parts written apart and put together are the files of one process, byte
// for byte: the same shards, the same records in each, the same indexes.
TEST_F(ShardPartsTest, PartsMakeTheFilesOfOneRun) {
  ASSERT_TRUE(GenRecords(Titanic(temp_.Join("one"))).ok());
  const std::string out = temp_.Join("spread");
  const ShardPartsRun run = Parts(4, out);
  // A part writes only its own shards: part 3 of 4 gets sink 3 (eval's
  // first shard), and none of train's.
  EXPECT_TRUE(ExistingShardFiles(run.part_dirs[3] + "/train").empty());
  EXPECT_EQ(ExistingShardFiles(run.part_dirs[3] + "/eval").size(), 2u);
  ASSERT_TRUE(PublishShardParts({run}, /*overwrite=*/false).ok());
  const auto one = Files(temp_.Join("one"));
  ASSERT_EQ(one.size(), 12u);  // 2 splits x 3 shards, each with its index
  EXPECT_EQ(Files(out), one);
  for (const std::string& part : run.part_dirs) {
    EXPECT_TRUE(ExistingShardFiles(part + "/train").empty()) << part;
  }
}

TEST_F(ShardPartsTest, ShardsInPlaceNeedOverwrite) {
  const std::string out = temp_.Join("out");
  ASSERT_TRUE(GenRecords(Titanic(out)).ok());
  const auto before = Files(out);
  const ShardPartsRun run = Parts(2, out);
  Status s = CheckShardPartsOutput({run}, /*overwrite=*/false);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(Message(s)),
              HasSubstr("already holds shards (" + out + "/train/part-"));
  EXPECT_FALSE(PublishShardParts({run}, false).ok());
  EXPECT_EQ(Files(out), before);
  ASSERT_TRUE(PublishShardParts({run}, /*overwrite=*/true).ok());
  EXPECT_EQ(Files(out), before);  // the same conversion again
  EXPECT_EQ(std::distance(fs::directory_iterator(out + "/train"),
                          fs::directory_iterator()),
            6);  // no older shard or staging directory left
}

// Two parts that wrote the same file: nothing goes into place.
TEST_F(ShardPartsTest, OverlappingPartsMoveNothing) {
  const std::string out = temp_.Join("out");
  ShardPartsRun run = Parts(2, out);
  fs::copy(run.part_dirs[0], temp_.Join("again"), fs::copy_options::recursive);
  run.part_dirs.push_back(temp_.Join("again"));
  Status s = PublishShardParts({run}, false);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_THAT(std::string(Message(s)), HasSubstr("another part wrote"));
  EXPECT_TRUE(ExistingShardFiles(out + "/train").empty());
  EXPECT_EQ(ExistingShardFiles(run.part_dirs[0] + "/train").size(), 4u);
}

}  // namespace
}  // namespace dtf
