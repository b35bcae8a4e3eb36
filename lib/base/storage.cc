#include "lib/base/storage.h"

#include <fnmatch.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "lib/base/bounded_read.h"
#include "lib/base/s3_client.h"
#include "lib/base/s3_files.h"

namespace dtf {
namespace {

namespace fs = std::filesystem;

struct StorageState {
  std::mutex mu;
  S3Options options;
  std::shared_ptr<S3Client> client;  // made on first use
};

StorageState& State() {
  static StorageState* state = new StorageState;
  return *state;
}

std::shared_ptr<S3Client> Client() {
  StorageState& state = State();
  std::lock_guard<std::mutex> lock(state.mu);
  if (state.client == nullptr) {
    state.client = std::make_shared<S3Client>(state.options);
  }
  return state.client;
}

// A local file written under a temporary name beside `path` and renamed
// over it by Close().
class LocalAtomicFile final : public WritableFile {
 public:
  LocalAtomicFile(std::unique_ptr<WritableFile> temp, std::string temp_path,
                  std::string path)
      : temp_(std::move(temp)),
        temp_path_(std::move(temp_path)),
        path_(std::move(path)) {}
  ~LocalAtomicFile() override {
    if (!closed_) {
      temp_->Close().IgnoreError();
      ::unlink(temp_path_.c_str());
    }
  }

  Status Append(std::string_view data) override { return temp_->Append(data); }
  Status Flush() override { return temp_->Flush(); }
  Status Sync() override { return temp_->Sync(); }
  Status Close() override {
    if (closed_) return status_;
    closed_ = true;
    status_ = temp_->Sync();
    const Status closed = temp_->Close();
    if (status_.ok()) status_ = closed;
    if (status_.ok() && ::rename(temp_path_.c_str(), path_.c_str()) != 0) {
      status_ = ErrnoToStatus(errno, path_);
    }
    if (!status_.ok()) ::unlink(temp_path_.c_str());
    return status_;
  }
  const std::string& name() const override { return path_; }

 private:
  std::unique_ptr<WritableFile> temp_;
  std::string temp_path_;
  std::string path_;
  bool closed_ = false;
  Status status_;
};

std::vector<FileInfo> LocalGlob(const std::string& pattern) {
  std::vector<FileInfo> out;
  glob_t g{};
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) {
      struct stat st;
      if (::stat(g.gl_pathv[i], &st) == 0 && S_ISREG(st.st_mode)) {
        out.push_back({g.gl_pathv[i], static_cast<uint64_t>(st.st_size)});
      }
    }
  }
  ::globfree(&g);
  return out;
}

StatusOr<std::vector<FileInfo>> S3Glob(const std::string& pattern) {
  DTF_ASSIGN_OR_RETURN(S3Path path, ParseS3Path(pattern));
  const size_t wild = path.key.find_first_of("*?[");
  std::vector<FileInfo> out;
  if (wild == std::string::npos) {
    StatusOr<FileInfo> found = StatFile(pattern);
    if (found.ok()) out.push_back(*found);
    if (!found.ok() && found.status().code() != absl::StatusCode::kNotFound) {
      return found.status();
    }
    return out;
  }
  DTF_ASSIGN_OR_RETURN(S3Listing listing,
                       Client()->List(path.bucket, path.key.substr(0, wild)));
  for (const S3Object& object : listing.objects) {
    if (::fnmatch(path.key.c_str(), object.key.c_str(), FNM_PATHNAME) == 0) {
      out.push_back({S3PathString({path.bucket, object.key}), object.size});
    }
  }
  return out;
}

}  // namespace

void ConfigureStorage(const S3Options& s3) {
  StorageState& state = State();
  std::lock_guard<std::mutex> lock(state.mu);
  state.options = s3;
  state.client = nullptr;
}

std::string JoinPath(std::string_view dir, std::string_view name) {
  if (dir.empty()) return std::string(name);
  if (dir.ends_with('/')) return absl::StrCat(ToAbsl(dir), ToAbsl(name));
  return absl::StrCat(ToAbsl(dir), "/", ToAbsl(name));
}

StatusOr<std::unique_ptr<SequentialFile>> OpenFileForRead(
    const std::string& path) {
  if (!IsS3Path(path)) return OpenSequentialFile(path);
  DTF_ASSIGN_OR_RETURN(S3Path s3, ParseS3Path(path));
  return OpenS3SequentialFile(Client(), s3);
}

StatusOr<std::unique_ptr<RandomAccessFile>> OpenFileForRandomRead(
    const std::string& path) {
  if (!IsS3Path(path)) return OpenRandomAccessFile(path);
  DTF_ASSIGN_OR_RETURN(S3Path s3, ParseS3Path(path));
  return OpenS3RandomAccessFile(Client(), s3);
}

StatusOr<std::unique_ptr<WritableFile>> CreateFile(const std::string& path) {
  if (IsS3Path(path)) {
    DTF_ASSIGN_OR_RETURN(S3Path s3, ParseS3Path(path));
    if (s3.key.empty() || s3.key.ends_with('/')) {
      return InvalidArgumentError(absl::StrCat(
          path, ": names no object (the key is empty or ends in '/')"));
    }
    return NewS3WritableFile(Client(), s3);
  }
  const fs::path target(path);
  std::error_code ec;
  if (target.has_parent_path())
    fs::create_directories(target.parent_path(), ec);
  const std::string temp =
      (target.parent_path() / absl::StrCat(".", target.filename().string(),
                                           ".tmp-", ::getpid(), "-",
                                           reinterpret_cast<uintptr_t>(&ec)))
          .string();
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file,
                       OpenWritableFile(temp));
  return std::make_unique<LocalAtomicFile>(std::move(file), temp, path);
}

StatusOr<std::string> ReadWholeFile(const std::string& path, size_t max_bytes) {
  if (!IsS3Path(path)) return ReadFileToStringAtMost(path, max_bytes);
  DTF_ASSIGN_OR_RETURN(S3Path s3, ParseS3Path(path));
  std::shared_ptr<S3Client> client = Client();
  DTF_ASSIGN_OR_RETURN(uint64_t size, client->Size(s3));
  if (size > max_bytes) {
    return InvalidArgumentError(
        absl::StrCat(path, ": larger than ", max_bytes, " bytes"));
  }
  return client->Get(s3);
}

Status WriteWholeFile(const std::string& path, std::string_view contents) {
  if (!IsS3Path(path)) return WriteFileAtomically(path, contents);
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, CreateFile(path));
  DTF_RETURN_IF_ERROR(file->Append(contents));
  return file->Close();
}

StatusOr<std::vector<FileInfo>> ListFiles(const std::string& pattern) {
  std::vector<FileInfo> out;
  if (IsS3Path(pattern)) {
    DTF_ASSIGN_OR_RETURN(out, S3Glob(pattern));
  } else {
    out = LocalGlob(pattern);
  }
  std::sort(out.begin(), out.end(), [](const FileInfo& a, const FileInfo& b) {
    return a.path < b.path;
  });
  return out;
}

StatusOr<std::vector<FileInfo>> ListTree(const std::string& dir) {
  std::vector<FileInfo> out;
  if (IsS3Path(dir)) {
    DTF_ASSIGN_OR_RETURN(S3Path s3, ParseS3Path(dir));
    std::string prefix = s3.key;
    if (!prefix.empty() && !prefix.ends_with('/')) prefix += '/';
    DTF_ASSIGN_OR_RETURN(S3Listing listing, Client()->List(s3.bucket, prefix));
    for (const S3Object& object : listing.objects) {
      out.push_back({S3PathString({s3.bucket, object.key}), object.size});
    }
    return out;
  }
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->is_regular_file(ec)) {
      out.push_back({it->path().string(), it->file_size(ec)});
    }
  }
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return ErrnoToStatus(ec.value(), dir);
  }
  std::sort(out.begin(), out.end(), [](const FileInfo& a, const FileInfo& b) {
    return a.path < b.path;
  });
  return out;
}

StatusOr<FileInfo> StatFile(const std::string& path) {
  if (IsS3Path(path)) {
    DTF_ASSIGN_OR_RETURN(S3Path s3, ParseS3Path(path));
    DTF_ASSIGN_OR_RETURN(uint64_t size, Client()->Size(s3));
    return FileInfo{path, size};
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return ErrnoToStatus(errno, path);
  return FileInfo{path, static_cast<uint64_t>(st.st_size)};
}

StatusOr<bool> FileExists(const std::string& path) {
  StatusOr<FileInfo> found = StatFile(path);
  if (found.ok()) return true;
  if (found.status().code() == absl::StatusCode::kNotFound) return false;
  return found.status();
}

Status RemoveFile(const std::string& path) {
  if (IsS3Path(path)) {
    DTF_ASSIGN_OR_RETURN(S3Path s3, ParseS3Path(path));
    return Client()->Delete(s3);
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return ErrnoToStatus(errno, path);
  }
  return OkStatus();
}

Status RenameFile(const std::string& from, const std::string& to) {
  if (!IsS3Path(from) && !IsS3Path(to)) {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return ErrnoToStatus(errno, absl::StrCat(from, " -> ", to));
    }
    return OkStatus();
  }
  if (IsS3Path(from) && IsS3Path(to)) {
    DTF_ASSIGN_OR_RETURN(S3Path a, ParseS3Path(from));
    DTF_ASSIGN_OR_RETURN(S3Path b, ParseS3Path(to));
    DTF_RETURN_IF_ERROR(Client()->Copy(a, b));
    return Client()->Delete(a);
  }
  DTF_ASSIGN_OR_RETURN(std::string contents, ReadWholeFile(from));
  DTF_RETURN_IF_ERROR(WriteWholeFile(to, contents));
  return RemoveFile(from);
}

}  // namespace dtf
