#include "lib/base/s3_files.h"

#include <algorithm>
#include <cstring>
#include <future>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace dtf {
namespace {

class S3SequentialFile final : public SequentialFile {
 public:
  S3SequentialFile(std::shared_ptr<S3Client> client, S3Path path, uint64_t size)
      : client_(std::move(client)),
        path_(std::move(path)),
        name_(S3PathString(path_)),
        size_(size),
        chunk_(std::max<size_t>(client_->options().read_chunk, 64 << 10)) {
    Prefetch();
  }
  ~S3SequentialFile() override {
    if (next_.valid()) next_.wait();
  }

  Status Read(size_t n, char* scratch, size_t* bytes_read) override {
    *bytes_read = 0;
    while (*bytes_read < n) {
      if (pos_ == buffer_.size()) {
        if (!next_.valid()) break;  // end of object
        StatusOr<std::string> got = next_.get();
        if (!got.ok()) return got.status();
        buffer_ = std::move(*got);
        pos_ = 0;
        if (buffer_.empty()) break;
        Prefetch();
      }
      const size_t count = std::min(n - *bytes_read, buffer_.size() - pos_);
      std::memcpy(scratch + *bytes_read, buffer_.data() + pos_, count);
      pos_ += count;
      *bytes_read += count;
    }
    return OkStatus();
  }

  const std::string& name() const override { return name_; }

 private:
  // Starts fetching the range after the last one asked for, if any is left.
  void Prefetch() {
    if (requested_ >= size_) return;
    const uint64_t offset = requested_;
    const size_t n =
        static_cast<size_t>(std::min<uint64_t>(chunk_, size_ - offset));
    requested_ += n;
    next_ = std::async(std::launch::async,
                       [client = client_, path = path_, offset, n] {
                         return client->GetRange(path, offset, n);
                       });
  }

  std::shared_ptr<S3Client> client_;
  S3Path path_;
  std::string name_;
  uint64_t size_;
  size_t chunk_;
  uint64_t requested_ = 0;
  std::future<StatusOr<std::string>> next_;
  std::string buffer_;
  size_t pos_ = 0;
};

class S3RandomAccessFile final : public RandomAccessFile {
 public:
  S3RandomAccessFile(std::shared_ptr<S3Client> client, S3Path path)
      : client_(std::move(client)),
        path_(std::move(path)),
        name_(S3PathString(path_)) {}

  Status Read(uint64_t offset, size_t n, char* scratch,
              size_t* bytes_read) const override {
    *bytes_read = 0;
    DTF_ASSIGN_OR_RETURN(std::string got, client_->GetRange(path_, offset, n));
    std::memcpy(scratch, got.data(), std::min(n, got.size()));
    *bytes_read = std::min(n, got.size());
    return OkStatus();
  }

  const std::string& name() const override { return name_; }

 private:
  std::shared_ptr<S3Client> client_;
  S3Path path_;
  std::string name_;
};

class S3WritableFile final : public WritableFile {
 public:
  S3WritableFile(std::shared_ptr<S3Client> client, S3Path path)
      : client_(std::move(client)),
        path_(std::move(path)),
        name_(S3PathString(path_)),
        part_size_(std::max<size_t>(client_->options().part_size, 5 << 20)) {}
  ~S3WritableFile() override {
    if (!closed_) Abort();
  }

  Status Append(std::string_view data) override {
    DTF_RETURN_IF_ERROR(CheckWritable());
    buffer_.append(data);
    while (buffer_.size() >= part_size_) {
      DTF_RETURN_IF_ERROR(Fail(UploadPart(part_size_)));
    }
    return OkStatus();
  }
  Status Flush() override { return CheckWritable(); }
  Status Sync() override { return CheckWritable(); }

  Status Close() override {
    if (closed_) return status_;
    if (status_.ok()) {
      if (upload_id_.empty()) {
        status_ = client_->Put(path_, buffer_);
      } else {
        if (!buffer_.empty()) status_ = UploadPart(buffer_.size());
        if (status_.ok()) {
          status_ = client_->CompleteMultipart(path_, upload_id_, etags_);
        }
      }
    }
    if (!status_.ok()) Abort();
    closed_ = true;
    buffer_.clear();
    buffer_.shrink_to_fit();
    return status_;
  }

  const std::string& name() const override { return name_; }

 private:
  Status CheckWritable() const {
    if (closed_) {
      return FailedPreconditionError(absl::StrCat(name_, ": file is closed"));
    }
    return status_;
  }

  Status Fail(Status status) {
    if (!status.ok() && status_.ok()) status_ = status;
    return status;
  }

  // Uploads the first `n` buffered bytes as the next part.
  Status UploadPart(size_t n) {
    if (upload_id_.empty()) {
      DTF_ASSIGN_OR_RETURN(upload_id_, client_->CreateMultipart(path_));
    }
    DTF_ASSIGN_OR_RETURN(
        std::string etag,
        client_->UploadPart(path_, upload_id_,
                            static_cast<int>(etags_.size()) + 1,
                            std::string_view(buffer_).substr(0, n)));
    etags_.push_back(std::move(etag));
    buffer_.erase(0, n);
    return OkStatus();
  }

  void Abort() {
    closed_ = true;
    if (!upload_id_.empty()) {
      client_->AbortMultipart(path_, upload_id_).IgnoreError();
      upload_id_.clear();
    }
  }

  std::shared_ptr<S3Client> client_;
  S3Path path_;
  std::string name_;
  size_t part_size_;
  std::string buffer_;
  std::string upload_id_;
  std::vector<std::string> etags_;
  bool closed_ = false;
  Status status_;
};

}  // namespace

StatusOr<std::unique_ptr<SequentialFile>> OpenS3SequentialFile(
    std::shared_ptr<S3Client> client, const S3Path& path) {
  DTF_ASSIGN_OR_RETURN(uint64_t size, client->Size(path));
  return std::make_unique<S3SequentialFile>(std::move(client), path, size);
}

StatusOr<std::unique_ptr<RandomAccessFile>> OpenS3RandomAccessFile(
    std::shared_ptr<S3Client> client, const S3Path& path) {
  DTF_RETURN_IF_ERROR(client->Size(path).status());
  return std::make_unique<S3RandomAccessFile>(std::move(client), path);
}

std::unique_ptr<WritableFile> NewS3WritableFile(
    std::shared_ptr<S3Client> client, const S3Path& path) {
  return std::make_unique<S3WritableFile>(std::move(client), path);
}

}  // namespace dtf
