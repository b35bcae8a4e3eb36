// The records one reader of the training input pipeline takes, epoch after
// epoch: its shard of the files (lib/data/shard_assignment.h), the files in
// a per-epoch order, optionally through a shuffle buffer, with the position
// needed to resume. Internal to lib/data; InputPipeline
// (lib/data/input_pipeline.h) is the public face.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/data/cache_filler.h"
#include "lib/data/compression.h"
#include "lib/data/input_position.h"
#include "lib/data/record_reader.h"
#include "lib/data/row_cache.h"
#include "lib/data/shard_assignment.h"

namespace dtf {

struct Record {
  // The record's bytes; empty when `block` holds the record parsed.
  std::string data;
  // With an input cache: the block holding the record parsed, as row `row`.
  std::shared_ptr<const RowBlock> block;
  int64_t row = 0;
  // Position of its file in the sorted file list.
  int64_t file = 0;
  // Byte offset of the record in its file's uncompressed stream.
  uint64_t offset = 0;
};

struct RecordStreamOptions {
  // Sorted; `shard` indexes it.
  std::vector<std::string> files;
  ShardAssignment shard;
  // nullopt: detected per file.
  std::optional<Compression> compression;
  // -1: forever.
  int64_t epochs = 1;
  // 0: records in file order, files in sorted order. Otherwise records are
  // shuffled through a buffer this large and the file order per epoch.
  int64_t shuffle_buffer_size = 0;
  uint64_t seed = 0;
  int64_t reader_index = 0;
  InputPosition start;
  // When it becomes true, Next() fails with Cancelled. May be null; must
  // outlive the stream.
  const std::atomic<bool>* stop = nullptr;
  // The input cache, or null. A file read from its first record to its end
  // is parsed as it is read and its rows go to the cache; later epochs take
  // a cached file's rows from the cache instead of reading it. Records then
  // come with `block` set. Must outlive the stream; the stream is its only
  // user. REQUIRES: the kept records of a file are the same in every epoch
  // (shard.whole_files() or no shuffling).
  RowCache* cache = nullptr;
  // Threads that parse a file going into the cache (>= 1). Default: 1.
  int parse_threads = 1;
};

// Not thread-safe.
class RecordStream {
 public:
  // InvalidArgument for a start position outside the epoch's files.
  static StatusOr<std::unique_ptr<RecordStream>> Create(
      RecordStreamOptions options);

  // The next record, valid until the next call; nullptr after the last
  // epoch, or after an epoch that started at its beginning and yielded no
  // record (so that repeating an empty shard forever ends). Errors: the
  // reader's (NotFound, DataLoss naming file and offset), FailedPrecondition
  // when the start position lies past the end of its file or, with
  // shuffling, when reading the epoch again does not lead back to it (the
  // files changed), Cancelled.
  StatusOr<const Record*> Next();

  // Where reading from the files has got to (records read into the shuffle
  // buffer count as read), and with shuffling how many records this epoch
  // has yielded.
  const InputPosition& position() const { return pos_; }
  // The reader's files for `epoch`, as positions in the sorted list, in the
  // order they are read.
  std::vector<int64_t> EpochFiles(int64_t epoch) const;
  const std::string& path(int64_t file) const { return options_.files[file]; }

 private:
  explicit RecordStream(RecordStreamOptions options);
  // Moves to the start of the next epoch, or ends the stream.
  void EndEpoch();
  void BeginEpoch();
  // Reads the epoch's next record this reader keeps into `*r`; false at the
  // end of the epoch.
  StatusOr<bool> ReadKept(Record* r);
  // Opens the file at pos_.file and skips pos_.record records, or starts
  // replaying it from the cache.
  Status OpenFile();
  // Leaves the current file for the next one in the epoch's order.
  void NextFile();
  // The next cached row of the file being replayed into `*r`; false after
  // its last.
  StatusOr<bool> ReplayNext(Record* r);
  // The next record of the file being read into the cache into `*r`;
  // false after its last.
  StatusOr<bool> FillNext(Record* r);
  // Cancelled once options_.stop is set.
  Status CheckStop() const;
  // The next record of the stream (Next() without the replay).
  StatusOr<const Record*> Emit();
  // With shuffling, from a position mid-epoch: reads the epoch again from
  // its start and drops the records the position had yielded, so that the
  // shuffle buffer holds what it held there.
  Status Replay();

  RecordStreamOptions options_;
  RecordReaderOptions reader_options_;
  InputPosition pos_;
  std::vector<int64_t> order_;  // EpochFiles(pos_.epoch)
  std::unique_ptr<RecordReader> reader_;
  // How the current file is read: from the file (kRaw), from the file into
  // the cache (kFill), from the cache (kReplay). open_ once OpenFile ran.
  enum class Mode { kRaw, kFill, kReplay };
  Mode mode_ = Mode::kRaw;
  bool open_ = false;
  std::unique_ptr<CacheFiller> filler_;  // with a cache
  std::shared_ptr<const RowBlock> replaying_;
  int64_t replay_block_ = 0;
  int64_t replay_row_ = 0;
  bool done_ = false;
  // Whether the epoch started at its beginning, and whether it has yielded a
  // record so far.
  bool whole_epoch_ = true;
  bool kept_any_ = false;
  // The shuffle buffer: buffer_[0, buffered_) hold records; epoch_read_
  // once the epoch's files are exhausted.
  std::vector<Record> buffer_;
  size_t buffered_ = 0;
  bool epoch_read_ = false;
  std::mt19937_64 rng_;
  Record out_;
  // The position Replay() must reach; set until it has.
  std::optional<InputPosition> replay_to_;
};

}  // namespace dtf
