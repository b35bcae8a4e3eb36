#include "lib/launch/pack/zip_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "lib/base/strings.h"
#include "lib/launch/pack/entry_name.h"
#include "lib/launch/pack/sha256.h"
#include "lib/launch/pack/zip_error.h"
#include "lib/launch/pack/zip_format.h"

namespace dtf::pack {
namespace {

namespace fs = std::filesystem;

StatusOr<struct stat> Stat(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return ErrnoToStatus(errno, path);
  if (!S_ISREG(st.st_mode)) {
    return InvalidArgumentError(StrCat(path, ": not a regular file"));
  }
  return st;
}

int64_t MtimeNs(const struct stat& st) {
  return int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
}

Status SyncPath(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(),
                        (directory ? O_DIRECTORY : 0) | O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, path);
  const int rc = ::fsync(fd);
  const int e = errno;
  ::close(fd);
  if (rc != 0) return ErrnoToStatus(e, path);
  return OkStatus();
}

// Removes the temporary file unless released.
class TempFile {
 public:
  explicit TempFile(std::string path) : path_(std::move(path)) {}
  ~TempFile() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  void Release() { path_.clear(); }

 private:
  std::string path_;
};

}  // namespace

Status ZipWriter::Add(Entry entry) {
  if (Status s = CheckEntryName(entry.path); !s.ok()) {
    return InvalidArgumentError(StrCat(entry.path, ": ", Message(s)));
  }
  if (entry.mode != kModeExecutable && entry.mode != kModeFile) {
    return InvalidArgumentError(StrCat(entry.path, ": mode ",
                                       fmt::format("{:o}", entry.mode),
                                       " is neither 755 nor 644"));
  }
  for (const Entry& e : entries_) {
    if (e.path == entry.path) {
      return AlreadyExistsError(
          StrCat(entry.path, ": two archive entries of this name"));
    }
  }
  entries_.push_back(std::move(entry));
  return OkStatus();
}

Status ZipWriter::AddBytes(std::string path, std::string data, uint32_t mode) {
  Entry e;
  e.path = std::move(path);
  e.data = std::move(data);
  e.mode = mode;
  return Add(std::move(e));
}

Status ZipWriter::AddFile(std::string path, std::string source, uint32_t mode) {
  DTF_ASSIGN_OR_RETURN(const struct stat st, Stat(source));
  Entry e;
  e.path = std::move(path);
  e.source = std::move(source);
  e.source_size = st.st_size;
  e.source_mtime_ns = MtimeNs(st);
  e.mode = mode;
  return Add(std::move(e));
}

StatusOr<WrittenArchive> ZipWriter::Write(const std::string& dir,
                                          std::string_view prefix) const {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return ErrnoToStatus(ec.value(), dir);

  std::string temp = StrCat(dir, "/.", prefix, "XXXXXX.zip.tmp");
  const int fd = ::mkstemps(temp.data(), 8);
  if (fd < 0) return ErrnoToStatus(errno, temp);
  ::close(fd);
  TempFile cleanup(temp);

  int open_error = 0;
  zip_t* za = zip_open(temp.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &open_error);
  if (za == nullptr) return ZipOpenErrorToStatus(open_error, temp);

  std::vector<const Entry*> sorted;
  for (const Entry& e : entries_) sorted.push_back(&e);
  std::sort(sorted.begin(), sorted.end(),
            [](const Entry* a, const Entry* b) { return a->path < b->path; });

  auto fail = [&](Status status) {
    zip_discard(za);
    return status;
  };
  for (const Entry* e : sorted) {
    zip_source_t* source =
        e->source.empty()
            ? zip_source_buffer(za, e->data.data(), e->data.size(), 0)
            : zip_source_file(za, e->source.c_str(), 0, -1);
    if (source == nullptr) {
      return fail(ZipArchiveError(
          za, e->source.empty() ? StrCat(temp, ": ", e->path) : e->source));
    }
    const zip_int64_t index =
        zip_file_add(za, e->path.c_str(), source, ZIP_FL_ENC_UTF_8);
    if (index < 0) {
      zip_source_free(source);
      return fail(ZipArchiveError(za, StrCat(temp, ": ", e->path)));
    }
    const auto i = static_cast<zip_uint64_t>(index);
    // Level 1: an archive of a debug build is hundreds of MiB, and the
    // higher levels cost seconds per launch for a few percent.
    if (zip_set_file_compression(za, i, ZIP_CM_DEFLATE, 1) != 0 ||
        zip_file_set_dostime(za, i, kDosTime, kDosDate, 0) != 0 ||
        zip_file_set_external_attributes(
            za, i, 0, ZIP_OPSYS_UNIX,
            static_cast<zip_uint32_t>(S_IFREG | e->mode) << 16) != 0 ||
        zip_file_extra_field_delete(za, i, ZIP_EXTRA_FIELD_ALL,
                                    ZIP_FL_CENTRAL | ZIP_FL_LOCAL) != 0) {
      return fail(ZipArchiveError(za, StrCat(temp, ": ", e->path)));
    }
  }
  // A source read at close must be what AddFile saw; one that is not is
  // the error to report, rather than libzip's, which names the archive.
  auto check_sources = [&]() -> Status {
    for (const Entry* e : sorted) {
      if (e->source.empty()) continue;
      DTF_ASSIGN_OR_RETURN(const struct stat st, Stat(e->source));
      if (st.st_size != e->source_size || MtimeNs(st) != e->source_mtime_ns) {
        return FailedPreconditionError(
            StrCat(e->source, ": changed while it was being packed"));
      }
    }
    return OkStatus();
  };
  if (zip_close(za) != 0) {
    const Status sources = check_sources();
    return fail(sources.ok() ? ZipArchiveError(za, temp) : sources);
  }
  DTF_RETURN_IF_ERROR(check_sources());
  if (::chmod(temp.c_str(), 0644) != 0) return ErrnoToStatus(errno, temp);
  DTF_RETURN_IF_ERROR(SyncPath(temp, /*directory=*/false));
  DTF_ASSIGN_OR_RETURN(const FileDigest digest, DigestFile(temp));
  WrittenArchive out;
  out.path = StrCat(dir, "/", prefix, digest.sha256.substr(0, 16), ".zip");
  out.sha256 = digest.sha256;
  out.size = digest.size;
  if (::rename(temp.c_str(), out.path.c_str()) != 0) {
    return ErrnoToStatus(errno, out.path);
  }
  cleanup.Release();
  DTF_RETURN_IF_ERROR(SyncPath(dir, /*directory=*/true));
  return out;
}

}  // namespace dtf::pack
