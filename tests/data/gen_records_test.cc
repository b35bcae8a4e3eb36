#include "lib/data/gen_records.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/data/example.h"
#include "lib/data/record_reader.h"
#include "tests/data/schema_testing.h"
#include "tests/testing/paths.h"
#include "tests/testing/temp_dir.h"

namespace dtf {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const std::string kAdult =
    std::string(DTF_SHARED_DIR) + "/data/adult/adult.data";

std::string Slurp(const fs::path& p) { return testing::ReadFile(p.string()); }

Schema AdultSchema() {
  Schema s;
  const std::pair<const char*, ValueType> cols[] = {
      {"age", ValueType::kInt},
      {"workclass", ValueType::kString},
      {"fnlwgt", ValueType::kInt},
      {"education", ValueType::kString},
      {"education_num", ValueType::kInt},
      {"marital_status", ValueType::kString},
      {"occupation", ValueType::kString},
      {"relationship", ValueType::kString},
      {"race", ValueType::kString},
      {"gender", ValueType::kString},
      {"capital_gain", ValueType::kInt},
      {"capital_loss", ValueType::kInt},
      {"hours_per_week", ValueType::kInt},
      {"native_country", ValueType::kString},
      {"income", ValueType::kString}};
  for (auto [name, type] : cols)
    s.columns.push_back(Cols({{name, type}}).columns[0]);
  s.missing_values = {"", "?"};
  s.label = LabelSpec{"income", {{"<=50K", 0}, {">50K", 1}}};
  return s;
}

std::vector<Example> ReadAll(const std::string& path) {
  RecordReaderOptions ro;
  ro.detect_compression = true;
  auto reader = RecordReader::Open(path, ro);
  EXPECT_TRUE(reader.ok()) << reader.status();
  std::vector<Example> out;
  std::string record;
  while (true) {
    auto more = (*reader)->ReadRecord(&record);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) break;
    Example e;
    EXPECT_TRUE(DecodeExample(record, &e).ok());
    out.push_back(std::move(e));
  }
  return out;
}

class GenRecordsTest : public ::testing::Test {
 protected:
  GenRecordsOptions Adult(const std::string& out) {
    GenRecordsOptions o;
    o.inputs = {kAdult};
    o.header = false;
    o.schema = AdultSchema();
    o.out_dir = (dir_ / out).string();
    return o;
  }
  std::string Write(const std::string& name, const std::string& text) {
    testing::WriteFile((dir_ / name).string(), text);
    return (dir_ / name).string();
  }

  testing::TempDir temp_{"dtf_gen_records_test"};
  fs::path dir_ = temp_.path();
};

TEST_F(GenRecordsTest, SameBytesWhateverTheThreadCount) {
  GenRecordsOptions one = Adult("one");
  one.shards = 3;
  one.threads = 1;
  GenRecordsOptions four = Adult("four");
  four.shards = 3;
  four.threads = 4;
  auto r1 = GenRecords(one);
  auto r4 = GenRecords(four);
  ASSERT_TRUE(r1.ok()) << r1.status();
  ASSERT_TRUE(r4.ok()) << r4.status();
  EXPECT_EQ(r1->rows_written, 32561);
  EXPECT_EQ(r4->rows_written, 32561);
  ASSERT_EQ(r1->outputs.size(), 3u);
  for (int s = 0; s < 3; ++s) {
    std::string name = ShardFileName(s, 3, Compression::kNone);
    std::string a = Slurp(dir_ / "one" / name);
    EXPECT_FALSE(a.empty());
    EXPECT_EQ(a, Slurp(dir_ / "four" / name)) << name;
  }
}

TEST_F(GenRecordsTest, RoundRobinKeepsInputOrder) {
  std::string csv = Write("in.csv", "a\n0\n1\n2\n3\n4\n5\n6\n");
  GenRecordsOptions o;
  o.inputs = {csv};
  o.schema = Cols({{"a", ValueType::kInt}});
  o.out_dir = (dir_ / "out").string();
  o.shards = 3;
  ASSERT_TRUE(GenRecords(o).ok());
  for (int s = 0; s < 3; ++s) {
    std::vector<Example> rows = ReadAll(
        (dir_ / "out" / ShardFileName(s, 3, Compression::kNone)).string());
    std::vector<int64_t> got;
    for (const Example& e : rows) got.push_back(e.Find("a")->int64_list[0]);
    std::vector<int64_t> want;
    for (int64_t v = s; v < 7; v += 3) want.push_back(v);
    EXPECT_EQ(got, want) << "shard " << s;
  }
}

TEST_F(GenRecordsTest, RowIndexContinuesAcrossInputsAndHeaders) {
  std::string a = Write("a.csv", "a\n0\n1\n");
  std::string b = Write("b.csv", "a\n2\n3\n4\n");
  GenRecordsOptions o;
  o.inputs = {a, b};
  o.schema = Cols({{"a", ValueType::kInt}});
  o.out_dir = (dir_ / "out").string();
  o.shards = 2;
  auto r = GenRecords(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->rows_written, 5);
  std::vector<Example> even = ReadAll(
      (dir_ / "out" / ShardFileName(0, 2, Compression::kNone)).string());
  ASSERT_EQ(even.size(), 3u);
  EXPECT_EQ(even[1].Find("a")->int64_list[0], 2);
}

TEST_F(GenRecordsTest, SplitIsDeterministicAndNearTheFractions) {
  GenRecordsOptions o = Adult("split");
  o.splits = {{"train", 0.8}, {"eval", 0.2}};
  o.compression = Compression::kGzip;
  auto r = GenRecords(o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->outputs.size(), 2u);
  int64_t train = r->outputs[0].records, eval = r->outputs[1].records;
  EXPECT_EQ(r->outputs[0].split, "train");
  EXPECT_EQ(train + eval, 32561);
  EXPECT_NEAR(static_cast<double>(eval) / 32561, 0.2, 0.01);
  EXPECT_TRUE(
      fs::exists(dir_ / "split" / "eval" / "part-00000-of-00001.tfrecord.gz"));
  GenRecordsOptions again = Adult("split2");
  again.splits = o.splits;
  again.threads = 3;
  auto r2 = GenRecords(again);
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2->outputs[1].records, eval);
}

TEST_F(GenRecordsTest, IndexFileListsEveryRecord) {
  GenRecordsOptions o = Adult("idx");
  o.write_index = true;
  o.shards = 2;
  ASSERT_TRUE(GenRecords(o).ok());
  std::string shard =
      (dir_ / "idx" / ShardFileName(1, 2, Compression::kNone)).string();
  std::istringstream index(Slurp(shard + ".index"));
  std::string data = Slurp(shard);
  uint64_t offset, length, expect = 0, n = 0;
  while (index >> offset >> length) {
    EXPECT_EQ(offset, expect);
    uint64_t stored;
    std::memcpy(&stored, data.data() + offset, 8);
    EXPECT_EQ(stored + 16, length);
    expect += length;
    ++n;
  }
  EXPECT_EQ(expect, data.size());
  EXPECT_EQ(n, 32561u / 2);
}

TEST_F(GenRecordsTest, IndexNeedsUncompressedOutput) {
  GenRecordsOptions o = Adult("idx");
  o.write_index = true;
  o.compression = Compression::kZlib;
  auto r = GenRecords(o);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(fs::exists(dir_ / "idx"));
}

TEST_F(GenRecordsTest, FailureLeavesNothingBehind) {
  std::string csv = Write("in.csv", "a\n1\n2\nx\n4\n");
  GenRecordsOptions o;
  o.inputs = {csv};
  o.schema = Cols({{"a", ValueType::kInt}});
  o.out_dir = (dir_ / "out").string();
  auto r = GenRecords(o);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("in.csv:4:1:"));
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

TEST_F(GenRecordsTest, FailureKeepsAnExistingOutputDirectoryAsItWas) {
  fs::create_directories(dir_ / "out");
  Write("out/keep.txt", "mine");
  std::string csv = Write("in.csv", "a\nx\n");
  GenRecordsOptions o;
  o.inputs = {csv};
  o.schema = Cols({{"a", ValueType::kInt}});
  o.out_dir = (dir_ / "out").string();
  ASSERT_FALSE(GenRecords(o).ok());
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir_ / "out")) {
    left.push_back(e.path().filename().string());
  }
  EXPECT_EQ(left, std::vector<std::string>{"keep.txt"});
}

TEST_F(GenRecordsTest, SkipCountsAndReportsRejectedRows) {
  std::string csv = Write("in.csv", "a\n1\nx\n3\ny\n");
  GenRecordsOptions o;
  o.inputs = {csv};
  o.schema = Cols({{"a", ValueType::kInt}});
  o.out_dir = (dir_ / "out").string();
  o.on_error = OnError::kSkip;
  auto r = GenRecords(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->rows_read, 4);
  EXPECT_EQ(r->rows_written, 2);
  EXPECT_EQ(r->rows_skipped, 2);
  ASSERT_EQ(r->rejected.size(), 2u);
  EXPECT_EQ(r->rejected[0].line, 3);
  EXPECT_EQ(r->rejected[1].line, 5);
}

TEST_F(GenRecordsTest, CancelledRunLeavesNoOutput) {
  std::atomic<bool> cancel{true};
  GenRecordsOptions o = Adult("out");
  o.cancel = &cancel;
  auto r = GenRecords(o);
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled);
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

TEST_F(GenRecordsTest, InfersTypesAndLabelMapping) {
  std::string csv =
      Write("in.csv", "n,x,s,y\n1,0.5,a,no\n2,1,b,yes\n3,,c,no\n");
  GenRecordsOptions o;
  o.inputs = {csv};
  o.infer_label = "y";
  o.out_dir = (dir_ / "out").string();
  auto r = GenRecords(o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->schema.columns.size(), 4u);
  EXPECT_EQ(r->schema.columns[0].type, ValueType::kInt);
  EXPECT_EQ(r->schema.columns[1].type, ValueType::kFloat);
  EXPECT_EQ(r->schema.columns[2].type, ValueType::kString);
  std::vector<Example> rows = ReadAll(
      (dir_ / "out" / ShardFileName(0, 1, Compression::kNone)).string());
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].Find("y")->int64_list[0], 1);  // sorted: no=0, yes=1
  EXPECT_EQ(rows[2].Find("x"), nullptr);           // missing, no default
}

TEST_F(GenRecordsTest, ShardKeyKeepsEqualKeysTogether) {
  std::string csv = Write("in.csv", "k,v\na,1\nb,2\na,3\nc,4\nb,5\na,6\n");
  GenRecordsOptions o;
  o.inputs = {csv};
  o.schema = Cols({{"k", ValueType::kString}, {"v", ValueType::kInt}});
  o.out_dir = (dir_ / "out").string();
  o.shards = 4;
  o.shard_key = "k";
  ASSERT_TRUE(GenRecords(o).ok());
  std::map<std::string, int> shard_of;
  for (int s = 0; s < 4; ++s) {
    for (const Example& e :
         ReadAll((dir_ / "out" / ShardFileName(s, 4, Compression::kNone))
                     .string())) {
      std::string key = e.Find("k")->bytes_list[0];
      auto [it, fresh] = shard_of.emplace(key, s);
      EXPECT_EQ(it->second, s) << key;
    }
  }
  EXPECT_EQ(shard_of.size(), 3u);
}

TEST_F(GenRecordsTest, ExistingShardsNeedOverwrite) {
  GenRecordsOptions o = Adult("out");
  ASSERT_TRUE(GenRecords(o).ok());
  auto again = GenRecords(o);
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
  o.overwrite = true;
  o.shards = 2;
  ASSERT_TRUE(GenRecords(o).ok());
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir_ / "out")) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 2);  // the old single shard is gone
}

TEST_F(GenRecordsTest, StaleStagingOfADeadRunIsRemoved) {
  fs::create_directories(dir_ / "out" / ".gen-records-999999999.tmp");
  ASSERT_TRUE(GenRecords(Adult("out")).ok());
  EXPECT_FALSE(fs::exists(dir_ / "out" / ".gen-records-999999999.tmp"));
}

// The staging directories left anywhere under `dir`.
std::vector<std::string> StagingDirs(const fs::path& dir) {
  std::vector<std::string> found;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().filename().string().starts_with(".gen-records-")) {
      found.push_back(e.path().string());
    }
  }
  return found;
}

TEST_F(GenRecordsTest, StagedRunsThatFailLeaveNoSplitBehind) {
  // A job's train source converts; its eval source then fails: neither
  // records/train nor records/ may be left.
  Schema schema = Cols({{"a", ValueType::kInt}});
  GenRecordsOptions train;
  train.inputs = {Write("train.csv", "a\n1\n2\n")};
  train.schema = schema;
  train.out_dir = (dir_ / "records" / "train").string();
  GenRecordsOptions eval = train;
  eval.inputs = {Write("eval.csv", "a\n3\nx\n")};
  eval.out_dir = (dir_ / "records" / "eval").string();
  {
    StagedRecords staged;
    ASSERT_TRUE(staged.Stage(train).ok());
    EXPECT_TRUE(fs::exists(dir_ / "records" / "train"));  // staged inside
    auto r = staged.Stage(eval);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("eval.csv:3:1:"));
  }
  EXPECT_FALSE(fs::exists(dir_ / "records"));
}

TEST_F(GenRecordsTest, StagedRunsGoIntoPlaceTogether) {
  Schema schema = Cols({{"a", ValueType::kInt}});
  GenRecordsOptions train;
  train.inputs = {Write("train.csv", "a\n1\n2\n")};
  train.schema = schema;
  train.out_dir = (dir_ / "records" / "train").string();
  GenRecordsOptions eval = train;
  eval.inputs = {Write("eval.csv", "a\n3\n")};
  eval.out_dir = (dir_ / "records" / "eval").string();
  const std::string name = ShardFileName(0, 1, Compression::kNone);
  {
    StagedRecords staged;
    ASSERT_TRUE(staged.Stage(train).ok());
    auto r = staged.Stage(eval);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->rows_written, 1);
    EXPECT_FALSE(fs::exists(dir_ / "records" / "train" / name));
    ASSERT_TRUE(staged.Commit().ok());
  }
  EXPECT_EQ(ReadAll((dir_ / "records" / "train" / name).string()).size(), 2u);
  EXPECT_EQ(ReadAll((dir_ / "records" / "eval" / name).string()).size(), 1u);
  EXPECT_EQ(StagingDirs(dir_), std::vector<std::string>{});
}

TEST_F(GenRecordsTest, FailedCommitPutsTheOlderShardsBack) {
  // Both splits hold shards of an earlier run; the new run replaces them
  // (overwrite), but the eval split cannot go into place: the train split,
  // already moved, must be undone, and no file of either half-replaced.
  const std::string name = ShardFileName(0, 1, Compression::kNone);
  fs::create_directories(dir_ / "records" / "train");
  fs::create_directories(dir_ / "records" / "eval");
  Write("records/train/" + name, "OLD TRAIN");
  Write("records/train/" + name + ".index", "OLD INDEX");
  Write("records/eval/" + name, "OLD EVAL");
  Schema schema = Cols({{"a", ValueType::kInt}});
  GenRecordsOptions train;
  train.inputs = {Write("train.csv", "a\n1\n2\n")};
  train.schema = schema;
  train.out_dir = (dir_ / "records" / "train").string();
  train.overwrite = true;
  GenRecordsOptions eval = train;
  eval.inputs = {Write("eval.csv", "a\n3\n")};
  eval.out_dir = (dir_ / "records" / "eval").string();
  // Pulls the eval run's staged files away before they can be renamed.
  eval.progress = [this](const GenRecordsProgress&) {
    for (const std::string& stage : StagingDirs(dir_ / "records" / "eval")) {
      fs::remove_all(stage);
    }
  };
  {
    StagedRecords staged;
    ASSERT_TRUE(staged.Stage(train).ok());
    ASSERT_TRUE(staged.Stage(eval).ok());
    EXPECT_FALSE(staged.Commit().ok());
  }
  EXPECT_EQ(Slurp(dir_ / "records" / "train" / name), "OLD TRAIN");
  EXPECT_EQ(Slurp(dir_ / "records" / "train" / (name + ".index")), "OLD INDEX");
  EXPECT_EQ(Slurp(dir_ / "records" / "eval" / name), "OLD EVAL");
  EXPECT_EQ(StagingDirs(dir_), std::vector<std::string>{});
}

TEST_F(GenRecordsTest, FailedCommitOfASplitRunLeavesNoSplitDirectory) {
  GenRecordsOptions o;
  o.inputs = {Write("in.csv", "a\n1\n2\n3\n4\n5\n6\n")};
  o.schema = Cols({{"a", ValueType::kInt}});
  o.out_dir = (dir_ / "out").string();
  o.splits = {{"train", 0.5}, {"eval", 0.5}};
  // A file where the eval split's directory should go: train goes into
  // place first and must be taken back.
  o.progress = [this](const GenRecordsProgress&) {
    Write("out/eval", "in the way");
  };
  auto r = GenRecords(o);
  ASSERT_FALSE(r.ok());
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir_ / "out")) {
    left.push_back(e.path().filename().string());
  }
  EXPECT_EQ(left, std::vector<std::string>{"eval"});
}

TEST_F(GenRecordsTest, MissingLabelIsRefusedAtItsLine) {
  std::string csv = Write("in.csv",
                          "x,note,y\n1,ok,yes\n2,\"two\nlines\",\n"
                          "3,ok,no\n4,ok,?\n");
  GenRecordsOptions o;
  o.inputs = {csv};
  o.schema = Cols({{"x", ValueType::kInt},
                   {"note", ValueType::kString},
                   {"y", ValueType::kString}});
  o.schema->missing_values = {"", "?"};
  o.schema->label = LabelSpec{"y", {{"no", 0}, {"yes", 1}}};
  o.out_dir = (dir_ / "out").string();
  auto r = GenRecords(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            csv + ":4:8: label column \"y\" is missing (the cell is empty)");
  EXPECT_FALSE(fs::exists(dir_ / "out"));

  o.on_error = OnError::kSkip;
  r = GenRecords(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->rows_read, 4);
  EXPECT_EQ(r->rows_written, 2);
  EXPECT_EQ(r->rows_skipped, 2);
  ASSERT_EQ(r->rejected.size(), 2u);
  EXPECT_EQ(r->rejected[0].line, 3);
  EXPECT_THAT(r->rejected[0].error, HasSubstr(":4:8: label column \"y\""));
  EXPECT_EQ(r->rejected[1].line, 6);
  EXPECT_THAT(r->rejected[1].error, HasSubstr(":6:6: label column \"y\""));
  std::vector<Example> rows = ReadAll(
      (dir_ / "out" / ShardFileName(0, 1, Compression::kNone)).string());
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].Find("y")->int64_list[0], 1);
  EXPECT_EQ(rows[1].Find("y")->int64_list[0], 0);
}

TEST_F(GenRecordsTest, MissingLabelIsRefusedWithAnInferredSchema) {
  std::string csv = Write("in.csv", "n,y\n1,no\n2,yes\n3,\n");
  GenRecordsOptions o;
  o.inputs = {csv};
  o.infer_label = "y";
  o.out_dir = (dir_ / "out").string();
  auto r = GenRecords(o);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("in.csv:4:3: label column \"y\" is missing"));
}

TEST_F(GenRecordsTest, BinaryFileIsRefusedUpFront) {
  std::string bin =
      Write("in.csv", std::string("PK\x03\x04\x14\0\0\0,x\n", 11));
  GenRecordsOptions o;
  o.inputs = {bin};
  o.out_dir = (dir_ / "out").string();
  auto r = GenRecords(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            bin +
                ": looks like a binary file, not CSV (NUL byte at line 1, "
                "column 6)");
  o.schema = Cols({{"a", ValueType::kInt}});
  r = GenRecords(o);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("looks like a binary file"));
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

TEST_F(GenRecordsTest, HeaderNameThatIsNoTextIsRefusedAtItsPlace) {
  std::string csv = Write("in.csv", "id,sco\xFFre\n1,2\n");
  GenRecordsOptions o;
  o.inputs = {csv};
  o.out_dir = (dir_ / "out").string();
  auto r = GenRecords(o);  // inferred schema
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr(csv + ":1:7: column name \"sco\\xffre\" is not UTF-8 "
                              "text"));
  o.schema = Cols({{"id", ValueType::kInt}});
  r = GenRecords(o);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr(csv + ":1:7:"));
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

TEST_F(GenRecordsTest, TextCellThatIsNoTextIsRefusedAtItsPlace) {
  // Past the first block, so that only the cell check can see it.
  std::string text = "n,s\n1," + std::string(70000, 'x') + "\n2,\"a\"\"b";
  text += std::string("\0c\"\n", 4);
  std::string csv = Write("in.csv", text);
  GenRecordsOptions o;
  o.inputs = {csv};
  o.schema = Cols({{"n", ValueType::kInt}, {"s", ValueType::kString}});
  o.out_dir = (dir_ / "out").string();
  auto r = GenRecords(o);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(
      std::string(r.status().message()),
      HasSubstr(csv + ":3:8: column \"s\": the cell \"a\\\"b\\x00\\x63\" "
                      "is not UTF-8 text (a NUL byte)"));
  EXPECT_FALSE(fs::exists(dir_ / "out"));

  csv = Write("latin1.csv", "n,s\n1,ok\n2,caf\xE9\n");
  o.inputs = {csv};
  r = GenRecords(o);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr(csv + ":3:6: column \"s\": the cell \"caf\\xe9\" is "
                              "not UTF-8 text (byte 0xE9, not UTF-8)"));
  EXPECT_FALSE(fs::exists(dir_ / "out"));
  o.on_error = OnError::kSkip;
  r = GenRecords(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->rows_written, 1);
  ASSERT_EQ(r->rejected.size(), 1u);
  EXPECT_EQ(r->rejected[0].line, 3);
}

TEST_F(GenRecordsTest, RowWithExtraFieldsIsRefusedAtItsOwnLine) {
  std::string text = "a,b,c,d\n";
  for (int i = 0; i < 14; ++i) text += "1,2,3,4\n";
  text += "1,2,3,4,55\n6,7,8,9\n";  // line 16
  std::string csv = Write("in.csv", text);
  GenRecordsOptions o;
  o.inputs = {csv};
  o.out_dir = (dir_ / "out").string();
  auto r = GenRecords(o);  // inferred: the row is among the inferred ones
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            csv + ":16:9: row has 5 fields, the header has 4");
  EXPECT_FALSE(fs::exists(dir_ / "out"));

  o.infer_rows = 3;  // past the inferred rows: the encoder sees it
  r = GenRecords(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            csv + ":16:9: row has 5 fields, the header has 4");

  o.schema = Cols({{"a", ValueType::kInt}, {"c", ValueType::kInt}});
  r = GenRecords(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            csv + ":16:9: row has 5 fields, the header has 4");

  o.on_error = OnError::kSkip;
  r = GenRecords(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->rows_written, 15);
  ASSERT_EQ(r->rejected.size(), 1u);
  EXPECT_EQ(r->rejected[0].line, 16);
}

TEST_F(GenRecordsTest, RowWithTooFewFieldsIsRefusedAtItsOwnLine) {
  // The short row starts on line 3; its quoted field runs onto line 4.
  std::string csv = Write("in.csv", "a,b,c\n1,x,3\n2,\"two\nlines\"\n4,y,6\n");
  GenRecordsOptions o;
  o.inputs = {csv};
  o.shard_key = "c";  // a key past the short row's last field
  o.shards = 2;
  o.out_dir = (dir_ / "out").string();
  o.schema = Cols({{"a", ValueType::kInt}, {"b", ValueType::kString}});
  auto r = GenRecords(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            csv + ":3: row has 2 fields, the header has 3");
  o.schema.reset();
  r = GenRecords(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            csv + ":3: row has 2 fields, the header has 3");
}

TEST_F(GenRecordsTest, WideCsvIsEncoded) {
  constexpr int kColumns = 20000;
  std::string text;
  for (int row = 0; row < 4; ++row) {
    for (int c = 0; c < kColumns; ++c) {
      if (c > 0) text += ',';
      text +=
          row == 0 ? "c" + std::to_string(c) : std::to_string(row * 100000 + c);
    }
    text += '\n';
  }
  std::string csv = Write("wide.csv", text);
  GenRecordsOptions o;
  o.inputs = {csv};
  o.out_dir = (dir_ / "out").string();
  o.shard_key = "c19999";
  auto r = GenRecords(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->rows_written, 3);
  std::vector<Example> rows = ReadAll(r->outputs[0].path);
  ASSERT_EQ(rows.size(), 3u);
  for (int row = 1; row <= 3; ++row) {
    const Example& e = rows[row - 1];
    EXPECT_EQ(e.features.size(), static_cast<size_t>(kColumns));
    for (int c : {0, 1, 9999, 19998, 19999}) {
      const Feature* f = e.Find("c" + std::to_string(c));
      ASSERT_NE(f, nullptr) << c;
      ASSERT_EQ(f->int64_list.size(), 1u);
      EXPECT_EQ(f->int64_list[0], row * 100000 + c);
    }
  }
}

TEST_F(GenRecordsTest, CancelStopsSchemaInference) {
  std::atomic<bool> cancel{true};
  GenRecordsOptions o = Adult("out");
  o.schema.reset();
  o.infer_rows = 0;
  o.cancel = &cancel;
  bool progressed = false;
  o.progress = [&](const GenRecordsProgress&) { progressed = true; };
  auto r = GenRecords(o);
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled);
  EXPECT_EQ(r.status().message(), "interrupted; no records were written");
  EXPECT_FALSE(progressed);
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

}  // namespace
}  // namespace dtf
