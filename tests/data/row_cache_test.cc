// The input cache (lib/data/row_cache.h), through the pipeline that owns it
// (InputPipelineOptions::cache): the same batches and positions as without
// it, later epochs served without the files, the memory budget and the
// spill file.
#include "lib/data/row_cache.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/data/example.h"
#include "lib/data/input_pipeline.h"
#include "lib/data/record_writer.h"

namespace dtf {
namespace {

namespace fs = std::filesystem;
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

// Everything a batch holds, and the position after it.
struct Seen {
  std::vector<int64_t> ids;
  std::vector<float> xs;
  std::vector<std::string> tags;
  std::vector<int64_t> tag_splits;
  InputPosition position;
  bool operator==(const Seen&) const = default;
};

struct Drained {
  std::vector<Seen> batches;
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
    Seen s;
    s.ids = b.Find("id")->int64s;
    s.xs = b.Find("x")->floats;
    const Column& tags = *b.Find("tags");
    for (int64_t v = 0; v < tags.num_values(); ++v) {
      s.tags.emplace_back(tags.bytes_value(v));
    }
    s.tag_splits = tags.row_splits;
    s.position = p.position();
    d.batches.push_back(std::move(s));
  }
  return d;
}

class RowCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        fs::path(::testing::TempDir()) /
        StrCat("row_cache_test_", getpid(), "_",
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "spill");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // `files` files of `per_file` records with consecutive ids; the glob.
  std::string WriteParts(int files, int per_file) {
    int64_t id = 0;
    for (int f = 0; f < files; ++f) {
      auto w = RecordWriter::Open((dir_ / StrCat("part-", f)).string(),
                                  {Compression::kGzip});
      EXPECT_TRUE(w.ok()) << w.status();
      for (int r = 0; r < per_file; ++r) {
        EXPECT_TRUE((*w)->WriteRecord(EncodeExample(Row(id++))).ok());
      }
      EXPECT_TRUE((*w)->Close().ok());
    }
    return (dir_ / "part-*").string();
  }
  InputPipelineOptions Options(const std::string& glob) {
    InputPipelineOptions o;
    o.files = {glob};
    o.features = {FixedLenFeature("id", FeatureType::kInt64),
                  FixedLenFeature("x", FeatureType::kFloat),
                  VarLenFeature("tags", FeatureType::kBytes)};
    o.batch_size = 7;
    o.epochs = 4;
    o.cache.spill_dir = (dir_ / "spill").string();
    o.cache.rows_per_block = 8;
    return o;
  }
  std::unique_ptr<InputPipeline> Create(const InputPipelineOptions& o) {
    auto p = InputPipeline::Create(o);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? std::move(*p) : nullptr;
  }

  fs::path dir_;
};

TEST_F(RowCacheTest, SameBatchesAndPositionsAsWithoutIt) {
  const std::string glob = WriteParts(3, 50);
  struct Case {
    int64_t shuffle;
    int64_t readers;
  };
  // Whole files (3 files, 1 or 2 readers), shuffled or not; records split
  // among 5 readers without shuffling.
  for (const Case c : {Case{0, 1}, Case{10, 1}, Case{1000, 2}, Case{0, 5}}) {
    for (int64_t budget : {int64_t{1} << 30, int64_t{0}, int64_t{2000}}) {
      for (int64_t prefetch : {0, 2}) {
        InputPipelineOptions o = Options(glob);
        o.shuffle_buffer_size = c.shuffle;
        o.seed = 5;
        o.reader_count = c.readers;
        o.reader_index = c.readers - 1;
        o.prefetch = prefetch;
        o.cache.parse_threads = prefetch == 0 ? 1 : 3;
        const std::string what =
            StrCat("shuffle ", c.shuffle, ", ", c.readers, " readers, budget ",
                   budget, ", prefetch ", prefetch);
        auto plain = Create(o);
        o.cache.enabled = true;
        o.cache.memory_budget_bytes = budget;
        auto cached = Create(o);
        ASSERT_TRUE(plain && cached);
        const Drained want = Drain(*plain);
        const Drained got = Drain(*cached);
        ASSERT_TRUE(want.status.ok()) << want.status;
        ASSERT_TRUE(got.status.ok()) << what << ": " << got.status;
        EXPECT_GT(want.batches.size(), 4u);
        EXPECT_TRUE(got.batches == want.batches) << what;
        const InputCacheStats stats = cached->cache_stats();
        EXPECT_TRUE(stats.active) << what;
        EXPECT_EQ(stats.files, c.readers == 2 ? 1 : 3) << what;
        if (budget == 0) {
          EXPECT_EQ(stats.memory_bytes, 0) << what;
          EXPECT_GT(stats.disk_bytes, 0) << what;
        }
        EXPECT_LE(stats.memory_bytes, budget) << what;
      }
    }
  }
}

// Files longer than a chunk of parsing (256 records per parse thread).
TEST_F(RowCacheTest, ParsesOverThreadsInChunks) {
  const std::string glob = WriteParts(2, 600);
  for (const int64_t readers : {1, 3}) {
    InputPipelineOptions o = Options(glob);
    o.epochs = 2;
    o.batch_size = 64;
    o.shuffle_buffer_size = readers == 1 ? 100 : 0;
    o.seed = 1;
    o.reader_count = readers;
    o.reader_index = readers - 1;
    o.cache.rows_per_block = 100;
    const Drained want = Drain(*Create(o));
    ASSERT_TRUE(want.status.ok()) << want.status;
    o.cache.enabled = true;
    for (int threads : {1, 2, 3}) {
      o.cache.parse_threads = threads;
      auto p = Create(o);
      const Drained got = Drain(*p);
      ASSERT_TRUE(got.status.ok()) << got.status;
      EXPECT_TRUE(got.batches == want.batches)
          << readers << " readers, " << threads << " parse threads";
      EXPECT_EQ(p->cache_stats().rows, readers == 1 ? 1200 : 400);
    }
  }
}

TEST_F(RowCacheTest, ARecordThatIsNotAnExampleNamesFileAndOffset) {
  const std::string path = (dir_ / "f").string();
  uint64_t bad_offset = 0;
  {
    auto w = RecordWriter::Open(path, {Compression::kNone});
    ASSERT_TRUE(w.ok());
    for (int i = 0; i < 600; ++i) {
      if (i == 300) {
        bad_offset = (*w)->offset();
        ASSERT_TRUE((*w)->WriteRecord("\x0a\xff").ok());
        continue;
      }
      ASSERT_TRUE((*w)->WriteRecord(EncodeExample(Row(i))).ok());
    }
    ASSERT_TRUE((*w)->Close().ok());
  }
  InputPipelineOptions o = Options(path);
  o.batch_size = 10;
  const Drained want = Drain(*Create(o));
  ASSERT_EQ(want.status.code(), StatusCode::kDataLoss) << want.status;
  for (int threads : {1, 2, 3}) {
    o.cache.enabled = true;
    o.cache.parse_threads = threads;
    const Drained got = Drain(*Create(o));
    EXPECT_EQ(got.batches.size(), 30u) << threads;
    EXPECT_TRUE(got.batches == want.batches) << threads;
    EXPECT_EQ(got.status, want.status) << threads;
    EXPECT_THAT(Message(got.status),
                HasSubstr(StrCat(path, ": record at offset ", bad_offset)));
  }
}

TEST_F(RowCacheTest, ACorruptFrameComesAfterTheBatchesBeforeIt) {
  const std::string path = (dir_ / "f").string();
  std::vector<uint64_t> offsets;
  {
    auto w = RecordWriter::Open(path, {Compression::kNone});
    ASSERT_TRUE(w.ok());
    for (int i = 0; i < 20; ++i) {
      offsets.push_back((*w)->offset());
      ASSERT_TRUE((*w)->WriteRecord(EncodeExample(Row(i))).ok());
    }
    ASSERT_TRUE((*w)->Close().ok());
  }
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(offsets[13] + 14));
    f.put('\x7f');
  }
  InputPipelineOptions o = Options(path);
  o.batch_size = 4;
  const Drained want = Drain(*Create(o));
  ASSERT_EQ(want.batches.size(), 3u);
  ASSERT_EQ(want.status.code(), StatusCode::kDataLoss) << want.status;
  for (int threads : {1, 2}) {
    o.cache.enabled = true;
    o.cache.parse_threads = threads;
    auto p = Create(o);
    const Drained got = Drain(*p);
    EXPECT_TRUE(got.batches == want.batches) << threads;
    EXPECT_EQ(got.status, want.status) << threads;
    EXPECT_EQ(p->cache_stats().files, 0) << threads;
  }
}

TEST_F(RowCacheTest, LaterEpochsDoNotReadTheFiles) {
  const std::string glob = WriteParts(2, 21);
  InputPipelineOptions o = Options(glob);
  o.prefetch = 0;
  o.shuffle_buffer_size = 5;
  o.seed = 9;
  const Drained want = Drain(*Create(o));
  ASSERT_TRUE(want.status.ok()) << want.status;
  for (int64_t budget : {int64_t{1} << 30, int64_t{0}}) {
    o.cache.enabled = true;
    o.cache.memory_budget_bytes = budget;
    auto p = Create(o);
    // The first epoch: 42 records in 6 batches.
    Drained d = Drain(*p, 6);
    ASSERT_EQ(d.batches.size(), 6u);
    ASSERT_EQ(d.batches.back().position.epoch, 0);
    for (int f = 0; f < 2; ++f) fs::remove(dir_ / StrCat("part-", f));
    Drained rest = Drain(*p);
    ASSERT_TRUE(rest.status.ok()) << budget << ": " << rest.status;
    d.batches.insert(d.batches.end(), rest.batches.begin(), rest.batches.end());
    EXPECT_TRUE(d.batches == want.batches) << budget;
    if (budget == 0) {
      const std::string spill = p->cache_stats().spill_path;
      EXPECT_THAT(spill, HasSubstr((dir_ / "spill").string()));
      EXPECT_TRUE(fs::exists(spill));
      p.reset();
      EXPECT_FALSE(fs::exists(spill)) << "the spill file outlived the cache";
    }
    WriteParts(2, 21);
  }
}

TEST_F(RowCacheTest, KeepsToTheMemoryBudget) {
  const std::string glob = WriteParts(4, 100);
  InputPipelineOptions o = Options(glob);
  o.cache.enabled = true;
  o.epochs = 2;
  o.cache.memory_budget_bytes = int64_t{1} << 30;
  auto all = Create(o);
  ASSERT_TRUE(Drain(*all).status.ok());
  const InputCacheStats whole = all->cache_stats();
  EXPECT_EQ(whole.rows, 400);
  EXPECT_EQ(whole.disk_bytes, 0);
  EXPECT_TRUE(whole.spill_path.empty());
  EXPECT_GT(whole.memory_bytes, 0);
  for (int64_t budget : {whole.memory_bytes / 3, whole.memory_bytes / 2}) {
    o.cache.memory_budget_bytes = budget;
    auto p = Create(o);
    ASSERT_TRUE(Drain(*p).status.ok());
    const InputCacheStats s = p->cache_stats();
    EXPECT_EQ(s.rows, 400);
    EXPECT_LE(s.memory_bytes, budget);
    EXPECT_GT(s.memory_bytes, budget / 2) << "budget " << budget;
    EXPECT_GT(s.disk_bytes, 0);
  }
}

// The first epoch's batches, then the spill file changed by `damage`: the
// error the pipeline gives.
class RowCacheSpillTest : public RowCacheTest {
 protected:
  Status AfterDamage(const std::function<void(const std::string&)>& damage) {
    InputPipelineOptions o = Options(WriteParts(2, 16));
    o.prefetch = 0;
    o.batch_size = 8;
    o.cache.enabled = true;
    o.cache.memory_budget_bytes = 0;
    auto p = Create(o);
    if (Drain(*p, 4).batches.size() != 4) return InternalError("short");
    spill_ = p->cache_stats().spill_path;
    if (spill_.empty()) return InternalError("nothing spilled");
    damage(spill_);
    Drained rest = Drain(*p);
    // Sticky.
    Batch b;
    EXPECT_EQ(p->Next(&b).status(), rest.status);
    return rest.status;
  }
  std::string spill_;
};

TEST_F(RowCacheSpillTest, CorruptSpillFileIsDataLossNamingIt) {
  const Status st = AfterDamage([](const std::string& path) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    f.put('\x7f');
  });
  EXPECT_EQ(st.code(), StatusCode::kDataLoss) << st;
  EXPECT_THAT(Message(st), HasSubstr(StrCat(spill_,
                                            ": input cache block at "
                                            "offset 0: checksum "
                                            "mismatch")));
}

TEST_F(RowCacheSpillTest, ShortenedSpillFileIsDataLossNamingIt) {
  // The file's last block is written after this, past the hole.
  const Status st =
      AfterDamage([](const std::string& path) { fs::resize_file(path, 30); });
  EXPECT_EQ(st.code(), StatusCode::kDataLoss) << st;
  EXPECT_THAT(Message(st),
              HasSubstr(StrCat(spill_, ": input cache block at offset 0: ")));
}

TEST_F(RowCacheSpillTest, MissingSpillFileIsNotFoundNamingIt) {
  const Status st =
      AfterDamage([](const std::string& path) { fs::remove(path); });
  EXPECT_EQ(st.code(), StatusCode::kNotFound) << st;
  EXPECT_THAT(Message(st),
              HasSubstr(StrCat(spill_, ": cannot open the input cache file")));
}

TEST_F(RowCacheTest, NoCacheWhereItCannotHelpOrHold) {
  const std::string glob = WriteParts(2, 10);
  InputPipelineOptions o = Options(glob);
  o.cache.enabled = true;
  o.epochs = 1;
  EXPECT_FALSE(Create(o)->cache_stats().active) << "one epoch";
  o.epochs = -1;
  EXPECT_TRUE(Create(o)->cache_stats().active) << "forever";
  // 2 files, 3 readers: records split by index, which shuffling changes
  // from epoch to epoch.
  o.reader_count = 3;
  o.shuffle_buffer_size = 4;
  EXPECT_FALSE(Create(o)->cache_stats().active) << "split and shuffled";
  o.cache.enabled = false;
  o.reader_count = 1;
  EXPECT_FALSE(Create(o)->cache_stats().active) << "disabled";
  o.cache.enabled = true;
  o.cache.rows_per_block = 0;
  EXPECT_EQ(InputPipeline::Create(o).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(RowCacheTest, ResumesAsWithoutIt) {
  InputPipelineOptions o = Options(WriteParts(3, 9));
  o.epochs = 3;
  o.batch_size = 4;
  o.prefetch = 0;
  const Drained want = Drain(*Create(o));
  o.cache.enabled = true;
  for (int taken : {0, 3, 8, 13}) {
    auto p = Create(o);
    Drained d = Drain(*p, taken);
    InputPipelineOptions r = o;
    r.start = p->position();
    Drained rest = Drain(*Create(r));
    ASSERT_TRUE(rest.status.ok()) << rest.status;
    d.batches.insert(d.batches.end(), rest.batches.begin(), rest.batches.end());
    EXPECT_TRUE(d.batches == want.batches) << taken << " batches";
  }
}

}  // namespace
}  // namespace dtf
