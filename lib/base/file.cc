#include "lib/base/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "lib/base/bounded_read.h"
#include "lib/base/os.h"

namespace dtf {
namespace {

constexpr size_t kWriteBufferSize = size_t{1} << 20;
constexpr size_t kReadChunkSize = size_t{1} << 20;

int CloseFd(int fd) {
  // Linux releases the descriptor even when close fails with EINTR, so it is
  // never retried.
  if (::close(fd) != 0 && errno != EINTR) return errno;
  return 0;
}

class PosixSequentialFile final : public SequentialFile {
 public:
  PosixSequentialFile(int fd, std::string name, bool owns_fd)
      : fd_(fd), name_(std::move(name)), owns_fd_(owns_fd) {}
  ~PosixSequentialFile() override {
    if (owns_fd_) ::close(fd_);
  }

  Status Read(size_t n, char* scratch, size_t* bytes_read) override {
    *bytes_read = 0;
    if (n == 0) return OkStatus();
    while (true) {
      ssize_t got = ::read(fd_, scratch, n);
      if (got >= 0) {
        *bytes_read = static_cast<size_t>(got);
        return OkStatus();
      }
      if (errno != EINTR) return ErrnoToStatus(errno, name_);
    }
  }

  const std::string& name() const override { return name_; }

 private:
  int fd_;
  std::string name_;
  bool owns_fd_;
};

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(int fd, std::string name)
      : fd_(fd), name_(std::move(name)) {}
  ~PosixWritableFile() override { Close().IgnoreError(); }

  Status Append(std::string_view data) override {
    DTF_RETURN_IF_ERROR(CheckWritable());
    if (data.size() <= kWriteBufferSize - buffered_) {
      if (buffer_ == nullptr) {
        buffer_ = std::make_unique_for_overwrite<char[]>(kWriteBufferSize);
      }
      std::memcpy(buffer_.get() + buffered_, data.data(), data.size());
      buffered_ += data.size();
      return OkStatus();
    }
    DTF_RETURN_IF_ERROR(FlushBuffer());
    if (data.size() >= kWriteBufferSize) return WriteRaw(data);
    return Append(data);
  }

  Status Flush() override {
    DTF_RETURN_IF_ERROR(CheckWritable());
    return FlushBuffer();
  }

  Status Sync() override {
    DTF_RETURN_IF_ERROR(Flush());
    if (::fsync(fd_) != 0) return Fail(errno);
    return OkStatus();
  }

  Status Close() override {
    if (closed_) return status_;
    closed_ = true;
    Status result = status_.ok() ? FlushBuffer() : status_;
    int close_error = CloseFd(fd_);
    fd_ = -1;
    buffer_.reset();
    if (result.ok() && close_error != 0) {
      result = ErrnoToStatus(close_error, name_);
    }
    status_ = result;
    return result;
  }

  const std::string& name() const override { return name_; }

 private:
  // The first error is kept: once a write failed, the file's contents are
  // unknown and every later call reports that failure.
  Status CheckWritable() const {
    if (closed_) {
      return FailedPreconditionError(absl::StrCat(name_, ": file is closed"));
    }
    return status_;
  }

  Status Fail(int errno_value) {
    status_ = ErrnoToStatus(errno_value, name_);
    return status_;
  }

  Status WriteRaw(std::string_view data) {
    Status written = WriteAllFd(fd_, data, name_);
    if (!written.ok()) status_ = written;
    return written;
  }

  Status FlushBuffer() {
    if (buffered_ == 0) return OkStatus();
    size_t n = buffered_;
    buffered_ = 0;
    return WriteRaw(std::string_view(buffer_.get(), n));
  }

  int fd_;
  std::string name_;
  std::unique_ptr<char[]> buffer_;
  size_t buffered_ = 0;
  bool closed_ = false;
  // The first error, or after Close() the result of closing.
  Status status_;
};

class PosixRandomAccessFile final : public RandomAccessFile {
 public:
  PosixRandomAccessFile(int fd, std::string name)
      : fd_(fd), name_(std::move(name)) {}
  ~PosixRandomAccessFile() override { ::close(fd_); }

  Status Read(uint64_t offset, size_t n, char* scratch,
              size_t* bytes_read) const override {
    *bytes_read = 0;
    while (*bytes_read < n) {
      ssize_t got = ::pread(fd_, scratch + *bytes_read, n - *bytes_read,
                            static_cast<off_t>(offset + *bytes_read));
      if (got == 0) break;
      if (got < 0) {
        if (errno == EINTR) continue;
        return ErrnoToStatus(errno, name_);
      }
      *bytes_read += static_cast<size_t>(got);
    }
    return OkStatus();
  }

  const std::string& name() const override { return name_; }

 private:
  int fd_;
  std::string name_;
};

class StringSequentialFile final : public SequentialFile {
 public:
  StringSequentialFile(std::string contents, std::string name)
      : contents_(std::move(contents)), name_(std::move(name)) {}

  Status Read(size_t n, char* scratch, size_t* bytes_read) override {
    size_t count = std::min(n, contents_.size() - pos_);
    std::memcpy(scratch, contents_.data() + pos_, count);
    pos_ += count;
    *bytes_read = count;
    return OkStatus();
  }

  const std::string& name() const override { return name_; }

 private:
  std::string contents_;
  std::string name_;
  size_t pos_ = 0;
};

class StringWritableFile final : public WritableFile {
 public:
  StringWritableFile(std::string* contents, std::string name)
      : contents_(contents), name_(std::move(name)) {}

  Status Append(std::string_view data) override {
    DTF_RETURN_IF_ERROR(CheckOpen());
    contents_->append(data);
    return OkStatus();
  }
  Status Flush() override { return CheckOpen(); }
  Status Sync() override { return CheckOpen(); }
  Status Close() override {
    closed_ = true;
    return OkStatus();
  }
  const std::string& name() const override { return name_; }

 private:
  Status CheckOpen() const {
    if (closed_) {
      return FailedPreconditionError(absl::StrCat(name_, ": file is closed"));
    }
    return OkStatus();
  }

  std::string* contents_;
  std::string name_;
  bool closed_ = false;
};

// The directory holding `path`, for creating a temporary file beside it.
std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

Status SyncDirectory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, dir);
  int error = ::fsync(fd) == 0 ? 0 : errno;
  ::close(fd);
  // Some file systems cannot fsync a directory; the rename has happened.
  if (error != 0 && error != EINVAL && error != EROFS) {
    return ErrnoToStatus(error, dir);
  }
  return OkStatus();
}

}  // namespace

StatusOr<std::unique_ptr<SequentialFile>> OpenSequentialFile(
    const std::string& path) {
  if (path == "-") {
    return std::make_unique<PosixSequentialFile>(STDIN_FILENO, "<stdin>",
                                                 /*owns_fd=*/false);
  }
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return ErrnoToStatus(errno, path);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return std::make_unique<PosixSequentialFile>(fd, path, /*owns_fd=*/true);
}

StatusOr<std::unique_ptr<RandomAccessFile>> OpenRandomAccessFile(
    const std::string& path) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return ErrnoToStatus(errno, path);
  return std::make_unique<PosixRandomAccessFile>(fd, path);
}

StatusOr<std::unique_ptr<WritableFile>> OpenWritableFile(
    const std::string& path, bool private_file) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                private_file ? 0600 : 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return ErrnoToStatus(errno, path);
  return std::make_unique<PosixWritableFile>(fd, path);
}

std::unique_ptr<SequentialFile> NewStringSequentialFile(std::string contents,
                                                        std::string name) {
  return std::make_unique<StringSequentialFile>(std::move(contents),
                                                std::move(name));
}

std::unique_ptr<WritableFile> NewStringWritableFile(std::string* contents,
                                                    std::string name) {
  return std::make_unique<StringWritableFile>(contents, std::move(name));
}

namespace {

// Reads `file` to its end; more than `max_bytes` is InvalidArgument.
StatusOr<std::string> ReadAll(SequentialFile* file, size_t max_bytes) {
  std::string contents;
  size_t size = 0;
  while (true) {
    if (contents.size() - size < kReadChunkSize / 4) {
      contents.resize(std::max(contents.size() * 2, size + kReadChunkSize));
    }
    size_t got = 0;
    DTF_RETURN_IF_ERROR(
        file->Read(contents.size() - size, contents.data() + size, &got));
    if (got == 0) break;
    size += got;
    if (size > max_bytes) {
      return InvalidArgumentError(
          absl::StrCat(file->name(), ": larger than ", max_bytes, " bytes"));
    }
  }
  contents.resize(size);
  return contents;
}

}  // namespace

StatusOr<std::string> ReadFileToString(const std::string& path) {
  return ReadFileToStringAtMost(path, std::numeric_limits<size_t>::max());
}

StatusOr<std::string> ReadFileToStringAtMost(const std::string& path,
                                             size_t max_bytes) {
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<SequentialFile> file,
                       OpenSequentialFile(path));
  return ReadAll(file.get(), max_bytes);
}

namespace {

int OpenPrivateNoFollow(const std::string& path) {
  int fd;
  do {
    fd = ::open(path.c_str(),
                O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

// The text of the symbolic link `path`; "" when it is none.
std::string PrivateLinkText(const std::string& path) {
  char buffer[256];
  const ssize_t n = ::readlink(path.c_str(), buffer, sizeof(buffer));
  return n > 0 && size_t(n) < sizeof(buffer) ? std::string(buffer, size_t(n))
                                             : std::string();
}

}  // namespace

std::string ProjectedVolumeFile(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir =
      slash == std::string::npos ? "." : path.substr(0, slash);
  const std::string key =
      slash == std::string::npos ? path : path.substr(slash + 1);
  if (key.empty() || key.starts_with("..") ||
      PrivateLinkText(path) != absl::StrCat("..data/", key)) {
    return "";
  }
  const std::string data = PrivateLinkText(absl::StrCat(dir, "/..data"));
  if (data.size() < 3 || !data.starts_with("..") || data == "..data" ||
      data.find('/') != std::string::npos) {
    return "";
  }
  return absl::StrCat(dir, "/", data, "/", key);
}

StatusOr<std::string> ReadPrivateFile(const std::string& path,
                                      size_t max_bytes) {
  int fd = OpenPrivateNoFollow(path);
  // A key of a Kubernetes Secret volume: the file its links stand for.
  if (fd < 0 && errno == ELOOP) {
    if (const std::string file = ProjectedVolumeFile(path); !file.empty()) {
      fd = OpenPrivateNoFollow(file);
    } else {
      errno = ELOOP;
    }
  }
  if (fd < 0) {
    if (errno == ELOOP) {
      return InvalidArgumentError(
          absl::StrCat(path, ": is a symbolic link, must be the file itself"));
    }
    return ErrnoToStatus(errno, path);
  }
  std::unique_ptr<SequentialFile> file =
      std::make_unique<PosixSequentialFile>(fd, path, /*owns_fd=*/true);
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoToStatus(errno, path);
  auto refuse = [&](const std::string& what) {
    return InvalidArgumentError(absl::StrCat(path, ": ", what));
  };
  if (!S_ISREG(st.st_mode)) return refuse("not a regular file");
  if (st.st_uid != ::geteuid()) {
    return refuse(absl::StrCat("owned by uid ", st.st_uid,
                               ", must be owned by the current user (uid ",
                               ::geteuid(), ")"));
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o",
                  static_cast<unsigned>(st.st_mode & 07777));
    return refuse(absl::StrCat("mode ", mode,
                               ", must not be readable by group or others "
                               "(chmod 600)"));
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return refuse(absl::StrCat(st.st_size, " bytes, larger than the ",
                               max_bytes, " allowed"));
  }
  return ReadAll(file.get(), max_bytes);
}

Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  const std::string dir = DirName(path);
  const size_t slash = path.rfind('/');
  const std::string base =
      slash == std::string::npos ? path : path.substr(slash + 1);
  std::string temp = absl::StrCat(dir, "/.", base, ".tmp.XXXXXX");
  std::vector<char> temp_buffer(temp.begin(), temp.end());
  temp_buffer.push_back('\0');
  int fd = ::mkostemp(temp_buffer.data(), O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, path);
  temp.assign(temp_buffer.data());

  Status status = OkStatus();
  if (::fchmod(fd, 0644) != 0) status = ErrnoToStatus(errno, path);
  if (status.ok()) status = WriteAllFd(fd, contents, path);
  if (status.ok() && ::fsync(fd) != 0) status = ErrnoToStatus(errno, path);
  const int close_error = CloseFd(fd);
  if (status.ok() && close_error != 0) {
    status = ErrnoToStatus(close_error, path);
  }
  if (status.ok() && ::rename(temp.c_str(), path.c_str()) != 0) {
    status = ErrnoToStatus(errno, path);
  }
  if (!status.ok()) {
    ::unlink(temp.c_str());
    return status;
  }
  return SyncDirectory(dir);
}

}  // namespace dtf

namespace dtf {

Status ReplaceDirectory(
    const std::string& target,
    const std::function<Status(const std::string& staging)>& write) {
  namespace fs = std::filesystem;
  const fs::path to(target);
  const fs::path parent =
      to.has_parent_path() ? to.parent_path() : fs::path(".");
  const std::string name = to.filename().string();
  const fs::path staging =
      parent / absl::StrCat(".", name, ".tmp-", ::getpid());
  const fs::path old = parent / absl::StrCat(".", name, ".old-", ::getpid());
  std::error_code ec;
  fs::remove_all(staging, ec);
  ec.clear();
  fs::create_directories(staging, ec);
  Status status = ec ? ErrnoToStatus(ec.value(), absl::StrCat("cannot create ",
                                                              staging.string()))
                     : write(staging.string());
  if (status.ok()) {
    fs::remove_all(old, ec);
    ec.clear();
    if (fs::exists(to)) fs::rename(to, old, ec);
    if (!ec) fs::rename(staging, to, ec);
    if (ec) {
      status = ErrnoToStatus(
          ec.value(), absl::StrCat("cannot move the export into ", target));
    }
    fs::remove_all(old, ec);
  }
  if (!status.ok()) fs::remove_all(staging, ec);
  return status;
}

}  // namespace dtf
