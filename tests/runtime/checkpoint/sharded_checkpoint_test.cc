// Sharded checkpoints: TensorFlow's slice keys, the index table read back,
// shards written, merged, committed, read and pruned, and writes that
// never committed (a shard that died mid-write) leaving the checkpoint
// before them whole.
#include "lib/runtime/checkpoint/sharded_checkpoint.h"

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "lib/runtime/checkpoint/shard_writer.h"
#include "lib/runtime/checkpoint/sharded_format.h"
#include "lib/runtime/checkpoint/tf_table.h"
#include "tests/testing/temp_dir.h"

namespace dtf::runtime {
namespace {

namespace fs = std::filesystem;

std::string_view Bytes(const std::vector<float>& v) {
  return std::string_view(reinterpret_cast<const char*>(v.data()),
                          v.size() * 4);
}

TEST(EncodeTensorNameSlice, IsTensorFlowsOrderedCode) {
  // 0, "a" escaped and terminated, rank 2, then start and length of each
  // dimension: 0 and 3 of the first (one byte each: 0x80 ^ value), the
  // second whole (0, -1).
  EXPECT_EQ(EncodeTensorNameSlice("a", 2, 0, 3), std::string("\x00"
                                                             "a\x00\x01"
                                                             "\x01\x02"
                                                             "\x80\x83"
                                                             "\x80\x7f",
                                                             10));
  // 1000 takes two bytes: 0x03e8 with the length bits 0xc0 in the first.
  EXPECT_EQ(EncodeTensorNameSlice("b", 1, 1000, 64), std::string("\x00"
                                                                 "b\x00\x01"
                                                                 "\x01\x01"
                                                                 "\xc3\xe8"
                                                                 "\xc0\x40",
                                                                 10));
  // Bytes 0x00 and 0xff of a name are escaped.
  EXPECT_EQ(EncodeTensorNameSlice(std::string("\x00\xff", 2), 1, 0, 1),
            std::string("\x00"
                        "\x00\xff\xff\x00\x00\x01"
                        "\x01\x01"
                        "\x80\x81",
                        11));
}

TEST(TfTable, ReadsBackWhatItWrites) {
  std::vector<std::pair<std::string, std::string>> entries;
  for (int i = 0; i < 300; ++i) {
    entries.emplace_back(fmt::format("key/{:04d}", i),
                         std::string(size_t(i % 7), char('a' + i % 26)));
  }
  for (size_t block : {size_t{64}, size_t{256 * 1024}}) {
    StatusOr<std::vector<std::pair<std::string, std::string>>> back =
        ParseTfTable(MakeTfTable(entries, block), "t.index");
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, entries);
  }
  std::string table = MakeTfTable(entries, 64);
  table[100] ^= 1;
  StatusOr<std::vector<std::pair<std::string, std::string>>> bad =
      ParseTfTable(table, "t.index");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(Message(bad.status()).find("t.index"), std::string::npos);
}

class ShardedCheckpointTest : public ::testing::Test {
 protected:
  // Two shards of a [5, 2] variable "v" (rows [0, 3) and [3, 5)) and a
  // third of the chief's state, every value offset by `base`.
  std::vector<ShardedIndexEntries> Write(int64_t step, float base,
                                         bool chief = true) {
    const std::string prefix = ShardedCheckpointPrefix(dir_.path(), step);
    const std::vector<int64_t> shape = {5, 2};
    std::vector<ShardedIndexEntries> shards;
    for (int k = 0; k < 2; ++k) {
      const int64_t start = k == 0 ? 0 : 3, rows = k == 0 ? 3 : 2;
      std::vector<float> values;
      for (int64_t i = 0; i < rows * 2; ++i) {
        values.push_back(base + float(start * 2 + i));
      }
      auto w = ShardWriter::Open(prefix, k, 3);
      EXPECT_TRUE(w.ok()) << w.status();
      EXPECT_TRUE((*w)->AddSlice("var/v", TfDtype::kFloat, shape, start, rows,
                                 Bytes(values))
                      .ok());
      auto entries = (*w)->Finish();
      EXPECT_TRUE(entries.ok()) << entries.status();
      shards.push_back(*entries);
    }
    if (chief) {
      auto w = ShardWriter::Open(prefix, 2, 3);
      EXPECT_TRUE(w.ok()) << w.status();
      Bundle state;
      state.AddInt64s("train/global_step", std::vector<int64_t>{step});
      state.AddString("meta/run_id", "run-1");
      EXPECT_TRUE((*w)->AddBundle(state).ok());
      shards.push_back(*(*w)->Finish());
    }
    return shards;
  }

  // Every value of "v" in the checkpoint at `prefix`.
  std::vector<float> Read(const std::string& prefix) {
    auto reader = ShardedCheckpointReader::Open(prefix);
    EXPECT_TRUE(reader.ok()) << reader.status();
    if (!reader.ok()) return {};
    const ShardedEntry* v = (*reader)->Find("var/v");
    EXPECT_NE(v, nullptr);
    if (v == nullptr) return {};
    std::vector<float> all(10, -1);
    for (const ShardedEntry::Slice& s : v->slices) {
      Status st = (*reader)->StreamSlice(
          "var/v", s, 8, [&](int64_t offset, std::string_view bytes) {
            std::memcpy(all.data() + s.start * 2 + offset / 4, bytes.data(),
                        bytes.size());
            return OkStatus();
          });
      EXPECT_TRUE(st.ok()) << st;
    }
    return all;
  }

  dtf::testing::TempDir dir_;
};

TEST_F(ShardedCheckpointTest, CommitsMergedIndexAndReadsItBack) {
  ASSERT_TRUE(CommitShardedCheckpoint(dir_.path(), 7, Write(7, 0), 3).ok());
  const std::string prefix = ShardedCheckpointPrefix(dir_.path(), 7);
  for (int k = 0; k < 3; ++k) {
    EXPECT_TRUE(fs::exists(ShardedDataPath(prefix, k, 3))) << k;
    EXPECT_FALSE(fs::exists(ShardedDataPath(prefix, k, 3) + ".tmp")) << k;
  }
  EXPECT_EQ(Read(prefix), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  auto reader = ShardedCheckpointReader::Open(prefix);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->num_shards(), 3);
  const ShardedEntry* v = (*reader)->Find("var/v");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->shape, (std::vector<int64_t>{5, 2}));
  ASSERT_EQ(v->slices.size(), 2u);
  StatusOr<Bundle> state = (*reader)->ReadUnsliced();
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->path(), prefix);
  EXPECT_EQ(*state->GetInt64s("train/global_step"), std::vector<int64_t>{7});
  EXPECT_EQ(*state->GetString("meta/run_id"), "run-1");
  EXPECT_EQ(state->Find("var/v"), nullptr);
  // TensorFlow's state file names the newest.
  StatusOr<std::string> text =
      ReadFileToString((fs::path(dir_.path()) / "checkpoint").string());
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("model_checkpoint_path: \"model.ckpt-7\""),
            std::string::npos);
}

TEST_F(ShardedCheckpointTest, AWriteThatNeverCommittedLeavesThePreviousWhole) {
  ASSERT_TRUE(CommitShardedCheckpoint(dir_.path(), 10, Write(10, 0), 3).ok());
  // Step 20: the shards wrote (one of them died half-way), and the chief
  // never committed.
  Write(20, 100, /*chief=*/false);
  const std::string next = ShardedCheckpointPrefix(dir_.path(), 20);
  fs::resize_file(ShardedDataPath(next, 1, 3) + ".tmp", 3);
  std::vector<ShardedGeneration> all = ListShardedCheckpoints(dir_.path());
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].step, 10);
  EXPECT_EQ(Read(all[0].prefix),
            (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  // A commit missing a shard's data file changes nothing.
  std::vector<ShardedIndexEntries> partial = Write(30, 200);
  fs::remove(ShardedDataPath(ShardedCheckpointPrefix(dir_.path(), 30), 2, 3) +
             ".tmp");
  Status st = CommitShardedCheckpoint(dir_.path(), 30, partial, 3);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st;
  EXPECT_EQ(ListShardedCheckpoints(dir_.path()).size(), 1u);
  // The next commit removes what the failed writes left.
  ASSERT_TRUE(CommitShardedCheckpoint(dir_.path(), 40, Write(40, 300), 3).ok());
  for (const auto& e : fs::directory_iterator(dir_.path())) {
    const std::string name = e.path().filename().string();
    EXPECT_TRUE(name.starts_with("model.ckpt-10.") ||
                name.starts_with("model.ckpt-40.") || name == "checkpoint")
        << name;
  }
}

TEST_F(ShardedCheckpointTest, KeepsTheNewestGenerations) {
  for (int64_t step : {1, 2, 3, 4}) {
    ASSERT_TRUE(
        CommitShardedCheckpoint(dir_.path(), step, Write(step, float(step)), 2)
            .ok());
  }
  std::vector<ShardedGeneration> all = ListShardedCheckpoints(dir_.path());
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].step, 4);
  EXPECT_EQ(all[1].step, 3);
  EXPECT_FALSE(fs::exists(
      ShardedDataPath(ShardedCheckpointPrefix(dir_.path(), 1), 0, 3)));
  // A second checkpoint of one step replaces the first.
  ASSERT_TRUE(CommitShardedCheckpoint(dir_.path(), 4, Write(4, 50), 2).ok());
  EXPECT_EQ(Read(ShardedCheckpointPrefix(dir_.path(), 4))[0], 50);
}

TEST_F(ShardedCheckpointTest, ACorruptShardIsDataLossNamingTheFile) {
  ASSERT_TRUE(CommitShardedCheckpoint(dir_.path(), 5, Write(5, 0), 1).ok());
  const std::string prefix = ShardedCheckpointPrefix(dir_.path(), 5);
  const std::string data = ShardedDataPath(prefix, 1, 3);
  std::string bytes = *ReadFileToString(data);
  bytes[2] ^= 0x40;
  ASSERT_TRUE(WriteFileAtomically(data, bytes).ok());
  auto reader = ShardedCheckpointReader::Open(prefix);
  ASSERT_TRUE(reader.ok());
  const ShardedEntry* v = (*reader)->Find("var/v");
  ASSERT_NE(v, nullptr);
  Status st = (*reader)->StreamSlice(
      "var/v", v->slices[1], 1 << 20,
      [](int64_t, std::string_view) { return OkStatus(); });
  EXPECT_EQ(st.code(), StatusCode::kDataLoss) << st;
  EXPECT_NE(Message(st).find(data), std::string::npos) << st;
}

}  // namespace
}  // namespace dtf::runtime
