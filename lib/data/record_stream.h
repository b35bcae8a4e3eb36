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
#include "lib/data/compression.h"
#include "lib/data/input_position.h"
#include "lib/data/record_reader.h"
#include "lib/data/shard_assignment.h"

namespace dtf {

struct Record {
  std::string data;
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
  // when the start position lies past the end of its file, Cancelled.
  StatusOr<const Record*> Next();

  // Where reading from the files has got to (records read into the shuffle
  // buffer count as read).
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
  // Opens the file at pos_.file and skips pos_.record records.
  Status OpenFile();
  // Cancelled once options_.stop is set.
  Status CheckStop() const;

  RecordStreamOptions options_;
  RecordReaderOptions reader_options_;
  InputPosition pos_;
  std::vector<int64_t> order_;  // EpochFiles(pos_.epoch)
  std::unique_ptr<RecordReader> reader_;
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
};

}  // namespace dtf
