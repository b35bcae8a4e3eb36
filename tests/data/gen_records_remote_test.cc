// gen-records into a bucket (StagedRecords' remote runs) against a real S3
// server (the fixture's SeaweedFS, tests/testing/s3_server.sh).
#include <unistd.h>

#include <atomic>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/s3_client.h"
#include "lib/base/storage.h"
#include "lib/data/gen_records.h"
#include "lib/data/record_reader.h"
#include "tests/testing/s3_bucket_test.h"

namespace dtf {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class GenRecordsRemoteTest : public testing::S3BucketTest {
 protected:
  GenRecordsRemoteTest() : S3BucketTest("dtf-gen") {}
  void SetUp() override {
    S3BucketTest::SetUp();
    if (HasFatalFailure()) return;
    std::string csv = "a,b\n";
    for (int i = 0; i < 100; ++i) absl::StrAppend(&csv, i, ",x", i % 3, "\n");
    ASSERT_EQ(WriteWholeFile(Url("in/part 1.csv"), csv), OkStatus());
    ASSERT_EQ(WriteWholeFile(Url("in/part 2.csv"), csv), OkStatus());
  }

  std::vector<std::string> Names(const std::string& pattern) const {
    std::vector<std::string> names;
    StatusOr<std::vector<FileInfo>> files = ListFiles(Url(pattern));
    if (!files.ok()) return {std::string(Message(files.status()))};
    for (const FileInfo& f : *files) {
      names.push_back(f.path.substr(f.path.rfind('/') + 1));
    }
    return names;
  }
  GenRecordsOptions Options(int shards) const {
    GenRecordsOptions o;
    o.inputs = {Url("in/part *.csv")};
    o.out_dir = Url("records");
    o.shards = shards;
    o.write_index = true;
    return o;
  }
};

TEST_F(GenRecordsRemoteTest, ReadsAndWritesTheBucket) {
  auto result = GenRecords(Options(2));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->rows_written, 200);
  ASSERT_EQ(result->outputs.size(), 2u);
  EXPECT_EQ(result->outputs[0].path,
            Url("records/part-00000-of-00002.tfrecord"));
  EXPECT_THAT(Names("records/*"),
              ElementsAre("part-00000-of-00002.tfrecord",
                          "part-00000-of-00002.tfrecord.index",
                          "part-00001-of-00002.tfrecord",
                          "part-00001-of-00002.tfrecord.index"));
  int64_t records = 0;
  for (const char* shard : {"records/part-00000-of-00002.tfrecord",
                            "records/part-00001-of-00002.tfrecord"}) {
    auto reader = RecordReader::Open(Url(shard));
    ASSERT_TRUE(reader.ok()) << reader.status();
    std::string record;
    while (true) {
      auto more = (*reader)->ReadRecord(&record);
      ASSERT_TRUE(more.ok()) << more.status();
      if (!*more) break;
      ++records;
    }
  }
  EXPECT_EQ(records, 200);
}

TEST_F(GenRecordsRemoteTest, OverwriteReplacesAndRemovesOlderShards) {
  ASSERT_TRUE(GenRecords(Options(3)).ok());
  auto again = GenRecords(Options(1));
  ASSERT_FALSE(again.ok());
  EXPECT_THAT(std::string(Message(again.status())),
              HasSubstr("already holds shards"));
  GenRecordsOptions o = Options(1);
  o.overwrite = true;
  ASSERT_TRUE(GenRecords(o).ok());
  EXPECT_THAT(Names("records/*.tfrecord"),
              ElementsAre("part-00000-of-00001.tfrecord"));
}

TEST_F(GenRecordsRemoteTest, NoMatchNamesThePattern) {
  GenRecordsOptions o = Options(1);
  o.inputs = {Url("in/none-*.csv")};
  auto result = GenRecords(o);
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(std::string(Message(result.status())),
              HasSubstr(Url("in/none-*.csv") + ": no file matches"));
  EXPECT_TRUE(Names("records/*").empty());
}

}  // namespace
}  // namespace dtf
