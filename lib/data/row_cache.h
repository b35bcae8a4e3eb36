// The input cache of one reader of the training input pipeline: the parsed
// rows of its shard, kept as the first epoch reads them so that later epochs
// skip reading, decompressing, checking and parsing the records (tf.data's
// cache()). Rows sit in blocks of consecutive records of one file; blocks
// stay in memory while they fit a budget, the rest are written to a spill
// file on local disk and read back, one block at a time, when an epoch
// reaches them. docs/input-pipeline.md specifies it. Internal to lib/data;
// InputPipeline (lib/data/input_pipeline.h) is the public face.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/data/batch.h"
#include "lib/data/row_format.h"

namespace dtf {

// Parsed rows of consecutive records of one file (those the reader keeps),
// each row's values side by side (lib/data/row_format.h), so that gathering a
// row touches one stretch of memory however the rows are shuffled.
struct RowBlock {
  // Row i is data[ends[i - 1], ends[i]) (from 0 for the first).
  std::string data;
  std::vector<int64_t> ends;
  // Per row: its record's number in the file (counting from 0, kept or not).
  std::vector<int64_t> records;

  int64_t rows() const { return static_cast<int64_t>(ends.size()); }
  std::string_view row(int64_t i) const {
    const int64_t begin = i == 0 ? 0 : ends[i - 1];
    return std::string_view(data).substr(begin, ends[i] - begin);
  }
};

struct RowCacheOptions {
  // What the rows hold. Required.
  std::vector<FeatureParseSpec> features;
  // Bytes of blocks kept in memory; the blocks beyond go to the spill file.
  // 0: every block goes to disk. Default: 1 GiB.
  int64_t memory_budget_bytes = int64_t{1} << 30;
  // Directory of the spill file, created when the first block goes there
  // and removed with the cache. Empty (default): the system's temporary
  // directory ($TMPDIR or /tmp).
  std::string spill_dir;
  // Rows per block. Default: 4096.
  int64_t rows_per_block = 4096;
};

// What the cache holds; a snapshot.
struct RowCacheStats {
  int64_t files = 0;  // files cached whole
  int64_t rows = 0;
  int64_t memory_bytes = 0;  // of the blocks kept in memory
  int64_t disk_bytes = 0;    // of the spill file
  std::string spill_path;    // empty until a block goes to disk
};

// One writer/reader thread (the pipeline's); stats() may be called from any
// thread.
class RowCache {
 public:
  explicit RowCache(RowCacheOptions options);
  // Removes the spill file.
  ~RowCache();
  RowCache(const RowCache&) = delete;
  RowCache& operator=(const RowCache&) = delete;

  const std::vector<FeatureParseSpec>& features() const {
    return options_.features;
  }
  int64_t rows_per_block() const { return options_.rows_per_block; }

  // Whether file `file` (its position in the sorted file list) is cached
  // whole, and then its blocks and records (kept or not).
  bool Has(int64_t file) const;
  int64_t blocks(int64_t file) const;
  int64_t records(int64_t file) const;

  // Block `i` of a cached file: from memory, or read back from the spill
  // file (NotFound when it has gone, DataLoss naming the file and offset
  // when it does not hold the block written there).
  // REQUIRES: Has(file), 0 <= i < blocks(file).
  StatusOr<std::shared_ptr<const RowBlock>> Block(int64_t file, int64_t i);

  // Filling one file, block after block: Add each full block (Batch::Finish
  // called), then Commit the file with its record count. Add keeps the
  // block in memory while the budget allows, else writes it to the spill
  // file (errors name the spill file). Blocks added for a file never
  // committed are dropped by the next Add for another file.
  Status Add(int64_t file, std::shared_ptr<const RowBlock> block);
  void Commit(int64_t file, int64_t records);

  RowCacheStats stats() const;

 private:
  struct Entry {
    std::shared_ptr<const RowBlock> memory;  // or, on disk:
    int64_t offset = -1;
    int64_t size = 0;
  };
  struct File {
    bool committed = false;
    int64_t records = 0;
    int64_t rows = 0;
    std::vector<Entry> blocks;
  };
  Status Spill(const RowBlock& block, Entry* entry);
  Status OpenSpill();

  RowCacheOptions options_;
  std::vector<File> files_;  // by file position, grown as needed
  int spill_fd_ = -1;
  std::string spill_path_;
  int64_t spill_size_ = 0;
  int64_t memory_ = 0;
  // For stats(), from other threads.
  std::atomic<int64_t> stat_files_{0}, stat_rows_{0}, stat_memory_{0},
      stat_disk_{0};
  std::atomic<bool> spilled_{false};
};

// The bytes a block holds (its buffers' capacities).
int64_t RowBlockBytes(const RowBlock& block);

}  // namespace dtf
