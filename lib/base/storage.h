// The storage seam: every file dtf reads or writes goes through these
// functions, which take local paths and s3://bucket/key alike. Local paths
// keep the POSIX behaviour of lib/base/file.h; s3:// paths go to the object
// store configured with ConfigureStorage (lib/base/s3_files.h).
//
// What is atomic: WriteWholeFile and CreateFile's Close() make the file
// appear whole or not at all, on disk (temporary file, fsync, rename) and on
// S3 (one PUT, or a multipart upload completed at Close). RenameFile is
// atomic on disk; on S3 it is a copy and then a delete.
//
// The S3 settings are the process's: cmd/ calls ConfigureStorage once at
// start, before any thread reads or writes s3:// paths; until then the
// defaults of S3Options (AWS, anonymous) apply. The functions are
// thread-safe.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "lib/base/file.h"
#include "lib/base/s3_options.h"
#include "lib/base/s3_path.h"
#include "lib/base/status.h"

namespace dtf {

void ConfigureStorage(const S3Options& s3);

// Whether `path` is in an object store rather than on a local disk.
inline bool IsRemotePath(std::string_view path) { return IsS3Path(path); }

struct FileInfo {
  std::string path;  // as it would be passed to the functions here
  uint64_t size = 0;
};

// Opens `path` for reading front to back ("-" is standard input). S3
// objects are read ahead in ranged GETs.
StatusOr<std::unique_ptr<SequentialFile>> OpenFileForRead(
    const std::string& path);
StatusOr<std::unique_ptr<RandomAccessFile>> OpenFileForRandomRead(
    const std::string& path);
// Creates `path`, which appears (replacing any older one) when Close()
// succeeds; a failed or missing Close() leaves no trace of it. Local
// parent directories are created.
StatusOr<std::unique_ptr<WritableFile>> CreateFile(const std::string& path);
StatusOr<std::string> ReadWholeFile(
    const std::string& path,
    size_t max_bytes = std::numeric_limits<size_t>::max());
Status WriteWholeFile(const std::string& path, std::string_view contents);

// The files matching `pattern`, sorted by path: a glob(3) pattern (*, ?,
// [...] never match '/'), or a plain path. Matching nothing is not an
// error (an empty list).
StatusOr<std::vector<FileInfo>> ListFiles(const std::string& pattern);
// Every file below the directory (or key prefix) `dir`, at any depth.
StatusOr<std::vector<FileInfo>> ListTree(const std::string& dir);
// NotFound when there is no such file.
StatusOr<FileInfo> StatFile(const std::string& path);
StatusOr<bool> FileExists(const std::string& path);
// Removing a file that is not there succeeds.
Status RemoveFile(const std::string& path);
Status RenameFile(const std::string& from, const std::string& to);
// Joins a directory (or key prefix) and a relative name with one '/'.
std::string JoinPath(std::string_view dir, std::string_view name);

}  // namespace dtf
