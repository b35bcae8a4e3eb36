// Writes TFRecord files (docs/formats/tfrecord.md), optionally compressed as a
// whole stream. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "lib/base/file.h"
#include "lib/base/status.h"
#include "lib/data/compression.h"

namespace dtf {

struct RecordWriterOptions {
  // Default: none.
  Compression compression = Compression::kNone;
  // zlib level 0-9; -1 (default) is zlib's default, 6.
  int compression_level = -1;
};

class RecordWriter {
 public:
  // Creates `path` (truncating it).
  static StatusOr<std::unique_ptr<RecordWriter>> Open(
      const std::string& path, const RecordWriterOptions& options = {});
  // Writes into `file`, which the writer owns from now on.
  RecordWriter(std::unique_ptr<WritableFile> file,
               const RecordWriterOptions& options);
  ~RecordWriter();

  Status WriteRecord(std::string_view data);
  // Appends bytes that already hold whole framed records (built with
  // record_format::AppendFramedRecord); `records` is how many, for counting.
  Status WriteFramed(std::string_view framed, uint64_t records);
  // Hands every record written so far to the OS (ending the deflate block of
  // a compressed stream), so that a reader of the file sees them.
  Status Flush();
  // Finishes the compressed stream, flushes and closes the file. Must be
  // called for the file to be complete.
  Status Close();

  // Records written so far.
  uint64_t records() const { return records_; }
  // Bytes written before compression: the offset of the next record in the
  // uncompressed stream.
  uint64_t offset() const { return offset_; }

 private:
  Status CheckOpen() const;
  Status Remember(Status status);
  // Hands the records batched in scratch_ to the file.
  Status FlushScratch();

  // Null when wrapping the file for compression failed (status_ says why).
  std::unique_ptr<WritableFile> file_;
  // Framed small records, batched so the file sees few large appends.
  std::string scratch_;
  uint64_t records_ = 0;
  uint64_t offset_ = 0;
  bool closed_ = false;
  // The first error, or after Close() the result of closing.
  Status status_;
};

}  // namespace dtf
