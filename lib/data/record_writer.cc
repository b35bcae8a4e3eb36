#include "lib/data/record_writer.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "lib/data/record_format.h"

namespace dtf {
namespace {

// Records are framed into a batch of about this size before the file sees
// them; larger records go to the file directly, without a copy.
constexpr size_t kBatchSize = size_t{256} << 10;

}  // namespace

StatusOr<std::unique_ptr<RecordWriter>> RecordWriter::Open(
    const std::string& path, const RecordWriterOptions& options) {
  if (options.compression != Compression::kNone &&
      (options.compression_level < -1 || options.compression_level > 9)) {
    return InvalidArgumentError(
        absl::StrCat(path, ": compression level ", options.compression_level,
                     " is out of range (expected -1 to 9)"));
  }
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file,
                       OpenWritableFile(path));
  auto writer = std::make_unique<RecordWriter>(std::move(file), options);
  DTF_RETURN_IF_ERROR(writer->status_);
  return writer;
}

RecordWriter::RecordWriter(std::unique_ptr<WritableFile> file,
                           const RecordWriterOptions& options) {
  StatusOr<std::unique_ptr<WritableFile>> wrapped = NewCompressedWritableFile(
      std::move(file), options.compression, options.compression_level);
  if (wrapped.ok()) {
    file_ = std::move(wrapped).value();
  } else {
    status_ = wrapped.status();
  }
  scratch_.reserve(kBatchSize + record_format::kOverhead);
}

RecordWriter::~RecordWriter() {
  if (!closed_ && file_ != nullptr) Close().IgnoreError();
}

Status RecordWriter::CheckOpen() const {
  if (closed_ && status_.ok()) {
    return FailedPreconditionError(
        absl::StrCat(file_->name(), ": record writer is closed"));
  }
  return status_;
}

Status RecordWriter::Remember(Status status) {
  if (!status.ok() && status_.ok()) status_ = status;
  return status;
}

Status RecordWriter::FlushScratch() {
  if (scratch_.empty()) return OkStatus();
  Status status = file_->Append(scratch_);
  scratch_.clear();
  return Remember(std::move(status));
}

Status RecordWriter::WriteRecord(std::string_view data) {
  DTF_RETURN_IF_ERROR(CheckOpen());
  if (data.size() < kBatchSize) {
    record_format::AppendFramedRecord(data, &scratch_);
    if (scratch_.size() >= kBatchSize) DTF_RETURN_IF_ERROR(FlushScratch());
  } else {
    DTF_RETURN_IF_ERROR(FlushScratch());
    char header[record_format::kHeaderSize];
    record_format::EncodeHeader(data.size(), header);
    char footer[record_format::kFooterSize];
    record_format::EncodeFooter(data, footer);
    DTF_RETURN_IF_ERROR(
        Remember(file_->Append(std::string_view(header, sizeof(header)))));
    DTF_RETURN_IF_ERROR(Remember(file_->Append(data)));
    DTF_RETURN_IF_ERROR(
        Remember(file_->Append(std::string_view(footer, sizeof(footer)))));
  }
  ++records_;
  offset_ += record_format::kOverhead + data.size();
  return OkStatus();
}

Status RecordWriter::WriteFramed(std::string_view framed, uint64_t records) {
  DTF_RETURN_IF_ERROR(CheckOpen());
  if (scratch_.size() + framed.size() > kBatchSize) {
    DTF_RETURN_IF_ERROR(FlushScratch());
  }
  if (framed.size() < kBatchSize) {
    scratch_.append(framed);
  } else {
    DTF_RETURN_IF_ERROR(Remember(file_->Append(framed)));
  }
  records_ += records;
  offset_ += framed.size();
  return OkStatus();
}

Status RecordWriter::Flush() {
  DTF_RETURN_IF_ERROR(CheckOpen());
  DTF_RETURN_IF_ERROR(FlushScratch());
  return Remember(file_->Flush());
}

Status RecordWriter::Close() {
  if (closed_) return status_;
  closed_ = true;
  if (!status_.ok()) {
    if (file_ != nullptr) file_->Close().IgnoreError();
    return status_;
  }
  Status status = FlushScratch();
  Status closed = file_->Close();
  if (status.ok()) status = closed;
  status_ = status;
  return status;
}

}  // namespace dtf
