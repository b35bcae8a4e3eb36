#include "lib/data/input_pipeline.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/data/example.h"
#include "lib/data/gen_records.h"
#include "lib/data/record_writer.h"
#include "tests/testing/paths.h"

namespace dtf {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Kind = Feature::Kind;

// Record `id`: {"id": [id], "x": [id / 2.0], "tags": id % 3 strings "t<id>"}.
Example Row(int64_t id) {
  Example e;
  e.features.push_back({"id", {Kind::kInt64, {}, {}, {id}}});
  Feature tags{Kind::kBytes, {}, {}, {}};
  for (int i = 0; i < id % 3; ++i) tags.bytes_list.push_back(StrCat("t", id));
  e.features.push_back({"tags", tags});
  e.features.push_back(
      {"x", {Kind::kFloat, {}, {static_cast<float>(id) / 2}, {}}});
  return e;
}

class InputPipelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        fs::path(::testing::TempDir()) /
        StrCat("input_pipeline_test_", getpid(), "_",
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes `examples` to `name`; returns the path.
  std::string Write(const std::string& name,
                    const std::vector<Example>& examples,
                    Compression c = Compression::kNone) {
    const std::string path = (dir_ / name).string();
    auto w = RecordWriter::Open(path, {c});
    EXPECT_TRUE(w.ok()) << w.status();
    for (const Example& e : examples) {
      offsets_.push_back((*w)->offset());
      EXPECT_TRUE((*w)->WriteRecord(EncodeExample(e)).ok());
    }
    EXPECT_TRUE((*w)->Close().ok());
    return path;
  }
  // `files` files of `per_file` records with consecutive ids, named
  // "part-<i>"; returns the glob matching them.
  std::string WriteParts(int files, int per_file) {
    int64_t id = 0;
    for (int f = 0; f < files; ++f) {
      std::vector<Example> rows;
      for (int r = 0; r < per_file; ++r) rows.push_back(Row(id++));
      Write(StrCat("part-", f), rows);
    }
    return (dir_ / "part-*").string();
  }
  InputPipelineOptions Options(const std::string& glob) {
    InputPipelineOptions o;
    o.files = {glob};
    o.features = {FixedLenFeature("id", FeatureType::kInt64),
                  FixedLenFeature("x", FeatureType::kFloat),
                  VarLenFeature("tags", FeatureType::kBytes)};
    o.batch_size = 4;
    return o;
  }

  fs::path dir_;
  std::vector<uint64_t> offsets_;
};

// Every batch's row count and the ids, in order; stops after `max_batches`.
struct Drained {
  std::vector<int64_t> sizes;
  std::vector<int64_t> ids;
  Status status;
};
Drained Drain(InputPipeline& p, int max_batches = 1 << 20) {
  Drained d;
  Batch b;
  for (int i = 0; i < max_batches; ++i) {
    StatusOr<bool> more = p.Next(&b);
    if (!more.ok()) {
      d.status = more.status();
      break;
    }
    if (!*more) break;
    d.sizes.push_back(b.rows);
    const Column* id = b.Find("id");
    for (int64_t r = 0; r < b.rows; ++r) d.ids.push_back(id->int64s[r]);
  }
  return d;
}
Drained RunAll(const InputPipelineOptions& o, int max_batches = 1 << 20) {
  auto p = InputPipeline::Create(o);
  EXPECT_TRUE(p.ok()) << p.status();
  if (!p.ok()) return {};
  return Drain(**p, max_batches);
}
std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}
std::vector<int64_t> Sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST_F(InputPipelineTest, BatchesInOrderWithRemainder) {
  InputPipelineOptions o = Options(WriteParts(2, 5));
  for (int64_t prefetch : {0, 2}) {
    o.prefetch = prefetch;
    o.drop_remainder = false;
    Drained d = RunAll(o);
    ASSERT_TRUE(d.status.ok()) << d.status;
    EXPECT_THAT(d.sizes, ElementsAre(4, 4, 2));
    EXPECT_EQ(d.ids, Iota(10));
    o.drop_remainder = true;
    EXPECT_THAT(RunAll(o).sizes, ElementsAre(4, 4));
  }
}

TEST_F(InputPipelineTest, ColumnsHoldValuesAndRaggedBytes) {
  InputPipelineOptions o = Options(WriteParts(1, 5));
  o.batch_size = 5;
  auto p = InputPipeline::Create(o);
  ASSERT_TRUE(p.ok()) << p.status();
  Batch b;
  ASSERT_TRUE(*(*p)->Next(&b));
  ASSERT_EQ(b.columns.size(), 3u);
  EXPECT_THAT(b.columns[1].floats, ElementsAre(0, 0.5, 1, 1.5, 2));
  const Column& tags = b.columns[2];
  EXPECT_THAT(tags.row_splits, ElementsAre(0, 0, 1, 3, 3, 4));
  EXPECT_EQ(tags.bytes_value(0), "t1");
  EXPECT_EQ(tags.bytes_value(1), "t2");
  EXPECT_EQ(tags.bytes_value(3), "t4");
  EXPECT_FALSE(*(*p)->Next(&b));
  EXPECT_EQ(b.rows, 0);
}

TEST_F(InputPipelineTest, EpochsRunAcrossBatches) {
  InputPipelineOptions o = Options(WriteParts(2, 5));
  o.epochs = 3;
  Drained d = RunAll(o);
  EXPECT_THAT(d.sizes, ElementsAre(4, 4, 4, 4, 4, 4, 4, 2));
  std::vector<int64_t> want;
  for (int e = 0; e < 3; ++e) {
    for (int64_t i : Iota(10)) want.push_back(i);
  }
  EXPECT_EQ(d.ids, want);
  o.epochs = 0;
  EXPECT_TRUE(RunAll(o).sizes.empty());
  o.epochs = -1;
  EXPECT_EQ(RunAll(o, 100).sizes.size(), 100u);
}

TEST_F(InputPipelineTest, ForeverOverAnEmptyShardEnds) {
  InputPipelineOptions o = Options(WriteParts(1, 2));
  o.epochs = -1;
  o.reader_count = 3;
  o.reader_index = 2;
  Drained d = RunAll(o);
  EXPECT_TRUE(d.status.ok()) << d.status;
  EXPECT_TRUE(d.ids.empty());
}

TEST_F(InputPipelineTest, ShuffleIsDeterministicAndPermutes) {
  InputPipelineOptions o = Options(WriteParts(3, 40));
  o.shuffle_buffer_size = 16;
  o.seed = 7;
  o.epochs = 2;
  Drained a = RunAll(o);
  o.prefetch = 0;
  Drained b = RunAll(o);
  ASSERT_EQ(a.ids.size(), 240u);
  EXPECT_EQ(a.ids, b.ids);
  const std::vector<int64_t> first(a.ids.begin(), a.ids.begin() + 120);
  const std::vector<int64_t> second(a.ids.begin() + 120, a.ids.end());
  EXPECT_NE(first, Iota(120));
  EXPECT_NE(first, second);
  EXPECT_EQ(Sorted(first), Iota(120));
  EXPECT_EQ(Sorted(second), Iota(120));
  o.seed = 8;
  EXPECT_NE(RunAll(o).ids, a.ids);
}

// The union over readers is every record exactly once.
void ExpectShardsPartition(const InputPipelineOptions& base, int readers,
                           int64_t records) {
  std::vector<int64_t> all;
  for (int i = 0; i < readers; ++i) {
    InputPipelineOptions o = base;
    o.reader_count = readers;
    o.reader_index = i;
    Drained d = RunAll(o);
    ASSERT_TRUE(d.status.ok()) << d.status;
    all.insert(all.end(), d.ids.begin(), d.ids.end());
  }
  EXPECT_EQ(Sorted(all), Iota(records)) << readers << " readers";
}

TEST_F(InputPipelineTest, MoreFilesThanReadersReadsWholeFiles) {
  InputPipelineOptions o = Options(WriteParts(5, 3));
  o.reader_count = 2;
  o.reader_index = 1;
  auto p = InputPipeline::Create(o);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT((*p)->assignment().files, ElementsAre(1, 3));
  EXPECT_THAT(Drain(**p).ids, ElementsAre(3, 4, 5, 9, 10, 11));
  for (int readers : {1, 2, 3, 5}) ExpectShardsPartition(o, readers, 15);
  o.shuffle_buffer_size = 4;
  ExpectShardsPartition(o, 2, 15);
}

TEST_F(InputPipelineTest, FewerFilesThanReadersSplitsRecords) {
  InputPipelineOptions o = Options(WriteParts(2, 5));
  o.reader_count = 3;
  o.reader_index = 1;
  EXPECT_THAT(RunAll(o).ids, ElementsAre(1, 4, 7));
  for (int readers : {3, 4, 11}) ExpectShardsPartition(o, readers, 10);
  o.shuffle_buffer_size = 3;
  o.seed = 5;
  ExpectShardsPartition(o, 3, 10);
}

TEST_F(InputPipelineTest, DenseDefaultsAndMissingFeatures) {
  Example with_opt = Row(0);
  with_opt.features.push_back({"opt", {Kind::kFloat, {}, {1, 2}, {}}});
  const std::string path = Write("f", {with_opt, Row(1)});
  InputPipelineOptions o = Options(path);
  FeatureParseSpec opt = FixedLenFeature("opt", FeatureType::kFloat, 2);
  opt.default_float = {-1};
  o.features.push_back(opt);
  auto p = InputPipeline::Create(o);
  ASSERT_TRUE(p.ok()) << p.status();
  Batch b;
  ASSERT_TRUE(*(*p)->Next(&b));
  EXPECT_THAT(b.Find("opt")->floats, ElementsAre(1, 2, -1, -1));

  o.features.back().default_float.clear();
  o.prefetch = 0;
  Drained d = RunAll(o);
  EXPECT_EQ(d.status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(d.status),
              HasSubstr(StrCat(path, ": record at offset ", offsets_[1],
                               ": feature \"opt\": absent and has no default")))
      << d.status;
}

TEST_F(InputPipelineTest, WrongKindOrLengthNamesFileOffsetAndFeature) {
  std::vector<Example> rows = {Row(0), Row(1), Row(2), Row(3)};
  rows[2].features[2].second = {Kind::kInt64, {}, {}, {5}};
  rows[3].features[2].second = {Kind::kFloat, {}, {1, 2}, {}};
  const std::string path = Write("f", rows);
  InputPipelineOptions o = Options(path);
  Drained d = RunAll(o);
  EXPECT_TRUE(d.ids.empty());
  EXPECT_EQ(d.status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(d.status),
            StrCat(path, ": record at offset ", offsets_[2],
                   ": feature \"x\": expected float values, got int64"));
  rows.erase(rows.begin() + 2);
  const std::string path2 = Write("g", rows);
  d = RunAll(Options(path2));
  EXPECT_EQ(Message(d.status),
            StrCat(path2, ": record at offset ", offsets_.back(),
                   ": feature \"x\": expected 1 values, got 2"));
}

TEST_F(InputPipelineTest, CorruptRecordStopsThePipelineThroughPrefetch) {
  std::vector<Example> rows;
  for (int i = 0; i < 20; ++i) rows.push_back(Row(i));
  const std::string path = Write("f", rows);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(offsets_[13] + 14));
    f.put('\x7f');
  }
  InputPipelineOptions o = Options(path);
  o.prefetch = 3;
  auto p = InputPipeline::Create(o);
  ASSERT_TRUE(p.ok());
  Drained d = Drain(**p);
  EXPECT_THAT(d.sizes, ElementsAre(4, 4, 4));
  EXPECT_EQ(d.status.code(), StatusCode::kDataLoss);
  EXPECT_THAT(Message(d.status),
              HasSubstr(StrCat(path, ": corrupt record at offset ",
                               offsets_[13], ": data checksum mismatch")));
  Batch b;
  EXPECT_EQ((*p)->Next(&b).status(), d.status);
}

TEST_F(InputPipelineTest, DestroyingMidRunStopsPromptly) {
  InputPipelineOptions o = Options(WriteParts(2, 500));
  o.epochs = -1;
  o.prefetch = 4;
  o.batch_size = 2;
  // The input never ends (epochs = -1): destroying the pipeline must stop
  // its readers. 30 s only guards against a hang.
  for (int taken : {0, 1, 7}) {
    auto start = std::chrono::steady_clock::now();
    {
      auto p = InputPipeline::Create(o);
      ASSERT_TRUE(p.ok());
      Drain(**p, taken);
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start,
              std::chrono::seconds(30))
        << "after " << taken << " batches";
  }
}

TEST_F(InputPipelineTest, ResumesWhereThePositionSays) {
  InputPipelineOptions o = Options(WriteParts(3, 7));
  o.epochs = 2;
  o.batch_size = 3;
  for (int readers : {1, 2, 5}) {
    o.reader_count = readers;
    o.reader_index = readers - 1;
    const std::vector<int64_t> all = RunAll(o).ids;
    for (int taken = 0; taken * 3 <= static_cast<int>(all.size()); ++taken) {
      auto p = InputPipeline::Create(o);
      ASSERT_TRUE(p.ok());
      std::vector<int64_t> ids = Drain(**p, taken).ids;
      InputPipelineOptions r = o;
      r.start = (*p)->position();
      Drained rest = RunAll(r);
      ASSERT_TRUE(rest.status.ok()) << rest.status;
      ids.insert(ids.end(), rest.ids.begin(), rest.ids.end());
      EXPECT_EQ(ids, all) << readers << " readers, " << taken << " batches";
    }
  }
}

// With shuffling too, a pipeline created at any position() goes on with
// exactly the batches that followed: it reads the epoch again from its
// start and drops what the position had yielded, shuffle buffer included.
TEST_F(InputPipelineTest, ResumingShuffledIsExactAnywhere) {
  InputPipelineOptions o = Options(WriteParts(2, 15));
  o.epochs = 2;
  o.batch_size = 4;
  o.shuffle_buffer_size = 6;
  o.seed = 3;
  for (int readers : {1, 3}) {
    o.reader_count = readers;
    o.reader_index = readers - 1;
    const std::vector<int64_t> all = RunAll(o).ids;
    for (int taken = 0; taken * 4 <= static_cast<int>(all.size()); ++taken) {
      auto p = InputPipeline::Create(o);
      ASSERT_TRUE(p.ok());
      std::vector<int64_t> ids = Drain(**p, taken).ids;
      InputPipelineOptions r = o;
      r.start = (*p)->position();
      for (int variant = 0; variant < 3; ++variant) {
        r.prefetch = variant == 0 ? 0 : 2;
        r.cache.enabled = variant == 2;  // whole files: one reader
        Drained rest = RunAll(r);
        ASSERT_TRUE(rest.status.ok()) << rest.status;
        std::vector<int64_t> joined = ids;
        joined.insert(joined.end(), rest.ids.begin(), rest.ids.end());
        EXPECT_EQ(joined, all)
            << readers << " readers, " << taken << " batches, emitted "
            << r.start.emitted << ", variant " << variant;
      }
    }
  }
}

// A shuffled position without the count of records it had yielded (a
// checkpoint of an earlier dtf) goes on in the same file order: the
// records that sat in the shuffle buffer are skipped, none repeated.
TEST_F(InputPipelineTest, ResumingShuffledWithoutTheCountSkipsOnlyTheBuffer) {
  InputPipelineOptions o = Options(WriteParts(2, 30));
  o.epochs = 2;
  o.batch_size = 6;
  o.shuffle_buffer_size = 5;
  o.seed = 3;
  const std::vector<int64_t> all = RunAll(o).ids;
  auto p = InputPipeline::Create(o);
  ASSERT_TRUE(p.ok());
  const std::vector<int64_t> head = Drain(**p, 3).ids;
  InputPipelineOptions r = o;
  r.start = (*p)->position();
  EXPECT_EQ(r.start.epoch, 0);
  EXPECT_EQ(r.start.emitted, 18);
  r.start.emitted = -1;
  auto resumed = InputPipeline::Create(r);
  ASSERT_TRUE(resumed.ok());
  const std::vector<int64_t> rest = Drain(**resumed, 2).ids;
  EXPECT_EQ((*resumed)->position().emitted, -1) << "unknown to the epoch's end";
  const std::vector<int64_t> tail = Drain(**resumed).ids;
  std::vector<int64_t> first_epoch(head);
  first_epoch.insert(first_epoch.end(), rest.begin(), rest.end());
  first_epoch.insert(first_epoch.end(), tail.begin(), tail.end() - 60);
  std::set<int64_t> unique(first_epoch.begin(), first_epoch.end());
  EXPECT_EQ(unique.size(), first_epoch.size());
  EXPECT_GE(first_epoch.size(), 60u - 5);
  EXPECT_LT(first_epoch.size(), 60u);
  EXPECT_TRUE(std::equal(tail.end() - 60, tail.end(), all.end() - 60));
  // At an epoch boundary the resumed run is exact.
  r.start = InputPosition{1, 0, 0, 0};
  EXPECT_EQ(RunAll(r).ids, std::vector<int64_t>(all.begin() + 60, all.end()));
}

// A shuffled position the files no longer lead to (they changed since):
// FailedPrecondition saying so, no batch.
TEST_F(InputPipelineTest, ResumingShuffledOverChangedFilesFails) {
  InputPipelineOptions o = Options(WriteParts(2, 10));
  o.shuffle_buffer_size = 4;
  o.batch_size = 3;
  // 7 records yielded leave 11 read (7 + the buffer's 4), not 12.
  o.start = InputPosition{0, 1, 2, 12, 7};
  Drained d = RunAll(o);
  EXPECT_EQ(d.status.code(), StatusCode::kFailedPrecondition) << d.status;
  EXPECT_THAT(std::string(Message(d.status)),
              HasSubstr("the input files changed since"));
  EXPECT_TRUE(d.ids.empty());
  o.start = InputPosition{0, 1, 0, 10, 40};  // more than the epoch holds
  d = RunAll(o);
  EXPECT_EQ(d.status.code(), StatusCode::kFailedPrecondition) << d.status;
}

TEST_F(InputPipelineTest, StartPastTheEndOfAFileFails) {
  InputPipelineOptions o = Options(WriteParts(1, 3));
  o.start = InputPosition{0, 0, 5, 5};
  Drained d = RunAll(o);
  EXPECT_EQ(d.status.code(), StatusCode::kFailedPrecondition) << d.status;
  o.start = InputPosition{0, 2, 0, 0};
  EXPECT_EQ(InputPipeline::Create(o).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(InputPipelineTest, DetectsCompression) {
  Write("a.gz", {Row(0), Row(1)}, Compression::kGzip);
  Write("b.zz", {Row(2)}, Compression::kZlib);
  InputPipelineOptions o = Options((dir_ / "*").string());
  EXPECT_EQ(RunAll(o).ids, Iota(3));
  o.compression = Compression::kNone;
  EXPECT_EQ(RunAll(o).status.code(), StatusCode::kDataLoss);
}

TEST_F(InputPipelineTest, RejectsBadOptions) {
  InputPipelineOptions o = Options(WriteParts(1, 1));
  auto fails = [](const InputPipelineOptions& options) {
    return InputPipeline::Create(options).status().code();
  };
  const std::function<void(InputPipelineOptions*)> breakers[] = {
      [](InputPipelineOptions* b) { b->batch_size = 0; },
      [](InputPipelineOptions* b) { b->epochs = -2; },
      [](InputPipelineOptions* b) { b->shuffle_buffer_size = -1; },
      [](InputPipelineOptions* b) { b->prefetch = -1; },
      [](InputPipelineOptions* b) { b->reader_index = b->reader_count = 2; },
      [](InputPipelineOptions* b) {
        b->features.push_back(VarLenFeature("id", FeatureType::kInt64));
      }};
  for (const auto& breaker : breakers) {
    InputPipelineOptions bad = o;
    breaker(&bad);
    EXPECT_EQ(fails(bad), StatusCode::kInvalidArgument);
  }
  o.files = {(dir_ / "nothing-*").string()};
  EXPECT_EQ(fails(o), StatusCode::kNotFound);
}

TEST_F(InputPipelineTest, ReadsAdultRecordsFromGenRecords) {
  Schema schema;
  std::istringstream columns(
      "age workclass fnlwgt education education_num marital_status occupation "
      "relationship race gender capital_gain capital_loss hours_per_week "
      "native_country income");
  const std::vector<std::string> names{
      std::istream_iterator<std::string>(columns), {}};
  const std::set<std::string_view> int_columns = {
      "age",          "fnlwgt",       "education_num",
      "capital_gain", "capital_loss", "hours_per_week"};
  for (const std::string& name : names) {
    ColumnSpec c;
    c.name = name;
    c.type = int_columns.count(name) ? ValueType::kInt : ValueType::kString;
    schema.columns.push_back(c);
  }
  schema.missing_values = {"", "?"};
  schema.label = LabelSpec{"income", {{"<=50K", 0}, {">50K", 1}}};
  GenRecordsOptions g;
  g.inputs = {std::string(DTF_SHARED_DIR) + "/data/adult/adult.data"};
  g.header = false;
  g.schema = schema;
  g.out_dir = (dir_ / "adult").string();
  auto gen = GenRecords(g);
  ASSERT_TRUE(gen.ok()) << gen.status();
  ASSERT_EQ(gen->rows_written, 32561);

  InputPipelineOptions o;
  o.files = {(dir_ / "adult" / "*.tfrecord").string()};
  o.batch_size = 16;
  for (const std::string& name : names) {
    FeatureParseSpec f =
        FixedLenFeature(name, int_columns.count(name) || name == "income"
                                  ? FeatureType::kInt64
                                  : FeatureType::kBytes);
    if (f.type == FeatureType::kBytes) f.default_bytes = {"unknown"};
    o.features.push_back(f);
  }
  auto p = InputPipeline::Create(o);
  ASSERT_TRUE(p.ok()) << p.status();
  Batch b;
  ASSERT_TRUE(*(*p)->Next(&b));
  ASSERT_EQ(b.rows, 16);
  auto ints = [&](const char* name) {
    const std::vector<int64_t>& v = b.Find(name)->int64s;
    return std::vector<int64_t>(v.begin(), v.begin() + 3);
  };
  auto text = [&](const char* name, int64_t row) {
    return std::string(b.Find(name)->bytes_value(row));
  };
  EXPECT_THAT(ints("age"), ElementsAre(39, 50, 38));
  EXPECT_THAT(ints("fnlwgt"), ElementsAre(77516, 83311, 215646));
  EXPECT_THAT(ints("education_num"), ElementsAre(13, 13, 9));
  EXPECT_THAT(ints("capital_gain"), ElementsAre(2174, 0, 0));
  EXPECT_THAT(ints("hours_per_week"), ElementsAre(40, 13, 40));
  EXPECT_EQ(text("workclass", 0), "State-gov");
  EXPECT_EQ(text("workclass", 1), "Self-emp-not-inc");
  EXPECT_EQ(text("education", 2), "HS-grad");
  EXPECT_EQ(text("marital_status", 2), "Divorced");
  EXPECT_EQ(text("native_country", 0), "United-States");
  EXPECT_EQ(text("native_country", 14), "unknown");
  EXPECT_EQ(text("race", 14), "Asian-Pac-Islander");
  const std::vector<int64_t>& income = b.Find("income")->int64s;
  EXPECT_EQ(income[0], 0);
  EXPECT_EQ(income[7], 1);
  EXPECT_EQ(income[14], 1);
  int64_t rows = b.rows;
  while (*(*p)->Next(&b)) rows += b.rows;
  EXPECT_EQ(rows, 32561);
}

}  // namespace
}  // namespace dtf
