// Reads one file of a reader's shard into the input cache (lib/data/
// row_cache.h): the records it keeps, parsed ahead in chunks spread over
// parse threads, appended to the file's blocks in file order and handed out
// one by one. Internal to lib/data; RecordStream (lib/data/record_stream.h)
// uses it for a file it reads from the first record to the end.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/data/batch.h"
#include "lib/data/example_parser.h"
#include "lib/data/parse_threads.h"
#include "lib/data/record_reader.h"
#include "lib/data/row_cache.h"
#include "lib/data/shard_assignment.h"

namespace dtf {

// Not thread-safe: one user thread (its parse threads are its own).
class CacheFiller {
 public:
  // `cache` must outlive the filler. parse_threads >= 1.
  CacheFiller(RowCache* cache, int parse_threads);

  // A record read and parsed: its number in the file, its byte offset, and
  // the block row that holds it; or the error parsing it met (named by file
  // and offset).
  struct Row {
    int64_t record = 0;
    uint64_t offset = 0;
    std::shared_ptr<const RowBlock> block;
    int64_t row = 0;
    Status status;
  };

  // Starts on file `file` (its position in the sorted list, at `path`),
  // read by `reader` from its first record; the file's first record has
  // global index `epoch_start` in the epoch (ShardAssignment::Keeps).
  // `reader` and `shard` must outlive the file's reading.
  void Start(int64_t file, const std::string& path, RecordReader* reader,
             const ShardAssignment* shard, int64_t epoch_start);

  // The file's next kept record; nullptr after its last, once the file is
  // committed to the cache (then records() is the file's record count). A
  // row with an error status is the last: further calls return that error.
  // Errors: the reader's, the cache's (a spill file that cannot be
  // written), Cancelled once `stop` (may be null) is set.
  StatusOr<const Row*> Next(const std::atomic<bool>* stop);
  int64_t records() const { return read_; }

 private:
  // Reads and parses the next chunk of kept records into rows_; an error
  // reading or caching them becomes the status of the row after the last
  // good one.
  Status ParseAhead(const std::atomic<bool>* stop);
  // Parses raw_[0, n) over the parse threads and appends them to rows_.
  void Parse(int64_t n);
  // Appends the encoded rows [0, n) of parse thread `t` to the blocks.
  Status Append(int t, int64_t n);
  // Hands the block being filled to the cache.
  Status Seal();

  RowCache* cache_;
  ParseThreads threads_;
  std::vector<std::unique_ptr<ExampleParser>> parsers_;
  // Per parse thread: the rows it parsed (a scratch batch, then encoded),
  // and the first error it met (at index error_at in its range, else -1).
  struct Work {
    Batch scratch;
    std::string data;
    std::vector<int64_t> ends;
    Status error;
    int64_t error_at = -1;
  };
  std::vector<Work> work_;

  int64_t file_ = 0;
  std::string path_;
  RecordReader* reader_ = nullptr;
  const ShardAssignment* shard_ = nullptr;
  int64_t epoch_start_ = 0;
  int64_t read_ = 0;  // records read from the file, kept or not
  bool eof_ = false;
  bool committed_ = false;
  Status failed_;  // the error a row handed out carried
  // The chunk: raw kept records, then their rows.
  std::vector<std::string> raw_;
  std::vector<int64_t> raw_records_;
  std::vector<uint64_t> raw_offsets_;
  std::vector<Row> rows_;
  size_t next_ = 0;
  std::shared_ptr<RowBlock> filling_;
};

}  // namespace dtf
