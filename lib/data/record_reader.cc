#include "lib/data/record_reader.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "lib/base/storage.h"
#include "lib/data/crc32c.h"
#include "lib/data/little_endian.h"
#include "lib/data/record_format.h"

namespace dtf {
namespace {

namespace rf = record_format;

// Bytes asked of the file per read.
constexpr size_t kBlockSize = size_t{256} << 10;
// A buffer grown past this for a large record is given back once the large
// records are behind.
constexpr size_t kShrinkAbove = 4 * kBlockSize;

// Yields `prefix`, then the rest of `file`: the bytes read to detect the
// compression are handed back to the stream.
class PrefixedSequentialFile final : public SequentialFile {
 public:
  PrefixedSequentialFile(std::string prefix,
                         std::unique_ptr<SequentialFile> file)
      : prefix_(std::move(prefix)), file_(std::move(file)) {}

  Status Read(size_t n, char* scratch, size_t* bytes_read) override {
    if (pos_ < prefix_.size()) {
      size_t count = std::min(n, prefix_.size() - pos_);
      std::memcpy(scratch, prefix_.data() + pos_, count);
      pos_ += count;
      *bytes_read = count;
      return OkStatus();
    }
    return file_->Read(n, scratch, bytes_read);
  }

  const std::string& name() const override { return file_->name(); }

 private:
  std::string prefix_;
  size_t pos_ = 0;
  std::unique_ptr<SequentialFile> file_;
};

// Reads until `*out` holds `n` bytes or the file ends.
Status ReadUpTo(SequentialFile& file, size_t n, std::string* out) {
  out->resize(n);
  size_t have = 0;
  while (have < n) {
    size_t got = 0;
    DTF_RETURN_IF_ERROR(file.Read(n - have, out->data() + have, &got));
    if (got == 0) break;
    have += got;
  }
  out->resize(have);
  return OkStatus();
}

}  // namespace

StatusOr<std::unique_ptr<RecordReader>> RecordReader::Open(
    const std::string& path, const RecordReaderOptions& options) {
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<SequentialFile> file,
                       OpenFileForRead(path));
  return Create(std::move(file), options);
}

StatusOr<std::unique_ptr<RecordReader>> RecordReader::Create(
    std::unique_ptr<SequentialFile> file, const RecordReaderOptions& options) {
  RecordReaderOptions effective = options;
  if (options.detect_compression) {
    std::string head;
    DTF_RETURN_IF_ERROR(ReadUpTo(*file, rf::kHeaderSize, &head));
    effective.compression = DetectCompression(head);
    file = std::make_unique<PrefixedSequentialFile>(std::move(head),
                                                    std::move(file));
  }
  DTF_ASSIGN_OR_RETURN(file, NewDecompressedSequentialFile(
                                 std::move(file), effective.compression));
  return std::unique_ptr<RecordReader>(
      new RecordReader(std::move(file), effective));
}

RecordReader::RecordReader(std::unique_ptr<SequentialFile> file,
                           const RecordReaderOptions& options)
    : file_(std::move(file)),
      options_(options),
      compression_(options.compression) {}

RecordReader::~RecordReader() = default;

StatusOr<bool> RecordReader::ReadRecord(std::string* record) {
  DTF_RETURN_IF_ERROR(status_);
  StatusOr<bool> result = Next(record);
  if (!result.ok()) status_ = result.status();
  return result;
}

StatusOr<bool> RecordReader::Next(std::string* record) {
  DTF_ASSIGN_OR_RETURN(size_t available, Fill(rf::kHeaderSize));
  if (available == 0) return false;
  if (available < rf::kHeaderSize) {
    return Truncated(absl::StrCat("a ", rf::kHeaderSize, "-byte header"),
                     available);
  }
  const char* header = buffer_.data() + pos_;
  if (crc32c::Unmask(little_endian::Load32(header + rf::kLengthSize)) !=
      crc32c::Value(header, rf::kLengthSize)) {
    return Corrupt("length checksum mismatch");
  }
  const uint64_t length = little_endian::Load64(header);
  if (length > options_.max_record_size ||
      length > std::numeric_limits<size_t>::max() / 2) {
    return Corrupt(absl::StrCat("length ", length,
                                " exceeds the maximum record size ",
                                options_.max_record_size));
  }
  const size_t total = rf::kOverhead + static_cast<size_t>(length);
  DTF_ASSIGN_OR_RETURN(available, Fill(total));
  if (available < total) {
    const size_t data_bytes = available - rf::kHeaderSize;
    if (data_bytes < length) {
      return Truncated(absl::StrCat(length, " bytes of data"), data_bytes);
    }
    return Truncated(absl::StrCat("a ", rf::kFooterSize, "-byte data checksum"),
                     data_bytes - length);
  }
  const char* data = buffer_.data() + pos_ + rf::kHeaderSize;
  if (crc32c::Unmask(little_endian::Load32(data + length)) !=
      crc32c::Value(data, length)) {
    return Corrupt("data checksum mismatch");
  }
  record->assign(data, length);
  pos_ += total;
  offset_ += total;
  return true;
}

StatusOr<size_t> RecordReader::Fill(size_t n) {
  size_t available = end_ - pos_;
  if (available >= n || eof_) return available;
  if (buffer_.size() > kShrinkAbove && std::max(n, available) <= kBlockSize) {
    std::string smaller(kBlockSize, '\0');
    std::memcpy(smaller.data(), buffer_.data() + pos_, available);
    buffer_.swap(smaller);
  } else if (pos_ > 0) {
    std::memmove(buffer_.data(), buffer_.data() + pos_, available);
  }
  pos_ = 0;
  end_ = available;
  while (end_ < n && !eof_) {
    if (end_ == buffer_.size()) {
      // Doubling as bytes arrive bounds the buffer by twice the data read,
      // whatever length a record claims.
      buffer_.resize(
          std::max(kBlockSize, std::min(2 * buffer_.size(), n + kBlockSize)));
    }
    size_t got = 0;
    Status status =
        file_->Read(buffer_.size() - end_, buffer_.data() + end_, &got);
    if (!status.ok()) {
      if (status.code() != StatusCode::kDataLoss) return status;
      return DataLossError(absl::StrCat(
          status.message(), " (reading the record at offset ", offset_, ")"));
    }
    if (got == 0) eof_ = true;
    end_ += got;
  }
  return end_ - pos_;
}

Status RecordReader::Corrupt(absl::string_view what) const {
  return DataLossError(
      absl::StrCat(name(), ": corrupt record at offset ", offset_, ": ", what));
}

Status RecordReader::Truncated(absl::string_view expected, size_t got) const {
  return DataLossError(absl::StrCat(name(), ": truncated record at offset ",
                                    offset_, " (expected ", expected,
                                    ", file ends after ", got, ")"));
}

}  // namespace dtf
