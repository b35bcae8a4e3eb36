// Reads TFRecord files (docs/formats/tfrecord.md), verifying both checksums of
// every record. Corruption and truncation are reported as DataLoss with the
// file name and the byte offset of the bad record (in the uncompressed
// stream); no input makes the reader crash or allocate without bound. Not
// thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "lib/base/file.h"
#include "lib/base/status.h"
#include "lib/data/compression.h"

namespace dtf {

struct RecordReaderOptions {
  // Default: none. With `detect_compression` it is guessed instead.
  Compression compression = Compression::kNone;
  // Look at the file's first bytes to choose the compression
  // (DetectCompression). Default: false.
  bool detect_compression = false;
  // Records longer than this are reported as corrupt rather than allocated.
  // Default: 2 GiB, protobuf's own limit for a message.
  uint64_t max_record_size = uint64_t{2} << 30;
};

class RecordReader {
 public:
  static StatusOr<std::unique_ptr<RecordReader>> Open(
      const std::string& path, const RecordReaderOptions& options = {});
  // Reads from `file`, which the reader owns from now on. `file` yields the
  // stored bytes; the reader decompresses them per `options.compression`.
  static StatusOr<std::unique_ptr<RecordReader>> Create(
      std::unique_ptr<SequentialFile> file, const RecordReaderOptions& options);
  ~RecordReader();

  // Reads the next record into `*record`. Returns true when one was read and
  // false at a clean end of file (end of file exactly between records);
  // DataLoss on a bad checksum or a truncated record, naming the offset.
  StatusOr<bool> ReadRecord(std::string* record);

  // Offset of the next record in the uncompressed stream.
  uint64_t offset() const { return offset_; }
  // Compression in effect (after detection).
  Compression compression() const { return compression_; }
  const std::string& name() const { return file_->name(); }

 private:
  RecordReader(std::unique_ptr<SequentialFile> file,
               const RecordReaderOptions& options);
  StatusOr<bool> Next(std::string* record);
  // Fills buffer_ until it holds `n` bytes from pos_, reading whole blocks and
  // growing only as bytes arrive; returns the bytes available (fewer than `n`
  // only at end of file).
  StatusOr<size_t> Fill(size_t n);
  Status Corrupt(absl::string_view what) const;
  Status Truncated(absl::string_view expected, size_t got) const;

  std::unique_ptr<SequentialFile> file_;
  RecordReaderOptions options_;
  Compression compression_;
  // Unread bytes are buffer_[pos_, end_).
  std::string buffer_;
  size_t pos_ = 0;
  size_t end_ = 0;
  bool eof_ = false;
  uint64_t offset_ = 0;
  // The first error; the reader does not go on past one.
  Status status_;
};

}  // namespace dtf
