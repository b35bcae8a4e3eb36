// Files behind small interfaces, so that the readers and writers can be
// handed a test double, and POSIX implementations of them. Every error is a
// Status naming the path (see lib/base/status.h for the codes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "lib/base/status.h"

namespace dtf {

// A file read front to back. Not thread-safe.
class SequentialFile {
 public:
  virtual ~SequentialFile() = default;
  // Reads up to `n` bytes into `scratch`; `*bytes_read` is 0 only at end of
  // file. Retries on EINTR.
  virtual Status Read(size_t n, char* scratch, size_t* bytes_read) = 0;
  // The name used in error messages ("<stdin>" for standard input).
  virtual const std::string& name() const = 0;
};

// A file read at any offset. Thread-safe: Read may be called from several
// threads at once.
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  // Reads up to `n` bytes at `offset` into `scratch`; fewer only at the end
  // of the file (`*bytes_read` is 0 at or past it).
  virtual Status Read(uint64_t offset, size_t n, char* scratch,
                      size_t* bytes_read) const = 0;
  virtual const std::string& name() const = 0;
};

// A file written front to back. Not thread-safe. Close() must be called and
// its Status checked; the destructor closes silently.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual Status Append(std::string_view data) = 0;
  // Writes buffered bytes to the OS.
  virtual Status Flush() = 0;
  // Flushes and fsyncs.
  virtual Status Sync() = 0;
  virtual Status Close() = 0;
  virtual const std::string& name() const = 0;
};

// Opens `path` for reading; "-" means standard input.
StatusOr<std::unique_ptr<SequentialFile>> OpenSequentialFile(
    const std::string& path);
// Opens `path` for reads at any offset.
StatusOr<std::unique_ptr<RandomAccessFile>> OpenRandomAccessFile(
    const std::string& path);
// Creates (or truncates) `path` with mode 0644 (0600 if `private_file`).
StatusOr<std::unique_ptr<WritableFile>> OpenWritableFile(
    const std::string& path, bool private_file = false);
// In-memory files, for tests and fuzzers. The writable one appends to
// `*contents`, which must outlive it.
std::unique_ptr<SequentialFile> NewStringSequentialFile(std::string contents,
                                                        std::string name);
std::unique_ptr<WritableFile> NewStringWritableFile(std::string* contents,
                                                    std::string name);
// Reads a whole file into memory.
StatusOr<std::string> ReadFileToString(const std::string& path);
// Writes `contents` to `path` atomically: a temporary file beside it, fsync,
// rename.
Status WriteFileAtomically(const std::string& path, std::string_view contents);

// A directory written whole or not at all: the staging directory beside
// `target` (".<name>.tmp-<pid>", emptied first) that `write` fills, then
// renamed over `target` (the old one moved aside and removed). When
// `write` or a rename fails, the staging directory is removed, `target` is
// left as it was, and the error is returned.
Status ReplaceDirectory(
    const std::string& target,
    const std::function<Status(const std::string& staging)>& write);

}  // namespace dtf
