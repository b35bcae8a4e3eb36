// The training input pipeline: TFRecord shards of tf.train.Example ->
// parsed rows -> columnar batches (lib/data/batch.h). What it computes is
// tf.data's
//   files -> (this reader's shard) -> shuffle(buffer, seed) per epoch
//         -> repeat(epochs) -> batch(batch_size, drop_remainder)
// with the parsing of tf.io.parse_example; docs/input-pipeline.md specifies
// it (sharding rule, shuffling, positions, errors).
//
// Thread-safety: one consumer thread calls Next() and position(); with
// prefetching, batches are produced on a background thread the pipeline
// owns, and errors it meets reach the consumer through Next().
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/data/batch.h"
#include "lib/data/compression.h"
#include "lib/data/input_position.h"
#include "lib/data/shard_assignment.h"

namespace dtf {

class RowCache;

// The input cache (docs/input-pipeline.md, "The input cache"): the parsed
// rows of this reader's shard, kept as the first epoch reads them, so that
// later epochs skip reading, decompressing, checking and parsing records.
// Batches and positions are the same with and without it.
struct InputCacheOptions {
  // Default: false. Even when true, there is no cache for a single epoch
  // (epochs 0 or 1), nor for a reader that splits files by record index
  // while shuffling (its records change from epoch to epoch).
  bool enabled = false;
  // Bytes of parsed rows kept in memory; the rest goes to a spill file.
  // 0: all of it to disk. Default: 1 GiB.
  int64_t memory_budget_bytes = int64_t{1} << 30;
  // Directory of the spill file (created when first needed; the file is
  // removed with the pipeline). Empty (default): $TMPDIR or /tmp.
  std::string spill_dir;
  // Rows per cached block, the unit that spills. Default: 4096.
  int64_t rows_per_block = 4096;
  // Threads that parse the first epoch's records into the cache, in chunks
  // (the pipeline's own thread and parse_threads - 1 more). Default: 1.
  int parse_threads = 1;
};

// What the input cache holds; all zero without one.
struct InputCacheStats {
  bool active = false;  // the pipeline has a cache
  int64_t files = 0;    // files cached whole
  int64_t rows = 0;
  int64_t memory_bytes = 0;
  int64_t disk_bytes = 0;
  std::string spill_path;  // empty until something spills
};

struct InputPipelineOptions {
  // TFRecord files or glob patterns. The expanded paths are sorted (and
  // duplicates dropped) before sharding. Required.
  std::vector<std::string> files;
  // What to parse; the batch has one column per spec, in this order.
  // Required.
  std::vector<FeatureParseSpec> features;
  // nullopt (default): detected per file from its first bytes.
  std::optional<Compression> compression;
  // Rows per batch. Default: 128.
  int64_t batch_size = 128;
  // Passes over the data; -1 repeats forever. Batches run across epoch
  // boundaries. Default: 1.
  int64_t epochs = 1;
  // 0 (default): records in file order, files in sorted order. Otherwise
  // records go through a buffer of this many records and come out in random
  // order (tf.data's shuffle(buffer_size); the buffer drains at the end of
  // each epoch), and each epoch reads the files in a random order.
  int64_t shuffle_buffer_size = 0;
  // Seeds the shuffling: the same seed gives the same batches. Every reader
  // of one job must use the same seed. Default: 0.
  uint64_t seed = 0;
  // Drop a last batch of fewer than batch_size rows. Default: false.
  bool drop_remainder = false;
  // This reader's index among reader_count readers (shard_assignment.h).
  // Default: 0 of 1.
  int64_t reader_index = 0;
  int64_t reader_count = 1;
  // Batches a background thread produces ahead of the consumer; 0 parses on
  // the consumer's thread inside Next(). Default: 2.
  int64_t prefetch = 2;
  // Where to start, as position() reported it. Default: the beginning.
  InputPosition start;
  // Default: no cache.
  InputCacheOptions cache;
};

class InputPipeline {
 public:
  // Validates the options (InvalidArgument naming the option or feature),
  // expands the globs (NotFound when one matches nothing) and starts the
  // background thread when prefetching. Files are opened as they are reached.
  static StatusOr<std::unique_ptr<InputPipeline>> Create(
      InputPipelineOptions options);
  // Stops the background thread (within a record's parsing) and joins it.
  ~InputPipeline();

  InputPipeline(const InputPipeline&) = delete;
  InputPipeline& operator=(const InputPipeline&) = delete;

  // Fills `*batch` with the next batch and returns true; false at the end.
  // `*batch`'s buffers are reused (and may be traded for the pipeline's).
  // Errors, which are sticky, name the file and the record's byte offset:
  // DataLoss for a corrupt record or one that is not an Example,
  // InvalidArgument for a feature of the wrong kind or length or absent with
  // no default, NotFound for a file that cannot be opened. On false or an
  // error `*batch` holds no rows.
  StatusOr<bool> Next(Batch* batch);

  // Position after the last batch Next() returned (the start position before
  // the first). A pipeline created at it yields exactly the batches that
  // followed when not shuffling. When shuffling it resumes in the same epoch
  // and file but skips the records that sat in the shuffle buffer (at most
  // shuffle_buffer_size) and shuffles differently, except at an epoch
  // boundary (file 0, record 0), where it is exact too.
  InputPosition position() const { return position_; }

  // All files matched by the patterns, sorted; sharding indexes this list.
  const std::vector<std::string>& files() const { return files_; }
  // This reader's share of them.
  const ShardAssignment& assignment() const { return assignment_; }
  // The input cache's state. Thread-safe.
  InputCacheStats cache_stats() const;

 private:
  class Producer;
  struct Slot;
  InputPipeline();
  void Run();

  std::vector<std::string> files_;
  ShardAssignment assignment_;
  // Declared before the producer, whose stream uses it.
  std::unique_ptr<RowCache> cache_;
  std::unique_ptr<Producer> producer_;
  InputPosition position_;
  Status status_;
  bool ended_ = false;
  // The background thread and what it shares with the consumer.
  struct Prefetch;
  std::unique_ptr<Prefetch> prefetch_;
};

}  // namespace dtf
