// Writes a reproducible zip archive (docs/pack.md): entries sorted by path,
// every timestamp 1980-01-01 00:00, Unix permissions 0755 or 0644, no extra
// fields, deflate-compressed; so the same entries always give the same
// bytes (with the same libzip and zlib). The archive is named by its
// content's SHA-256 and appears atomically: written to a temporary file in
// the output directory, synced, then renamed, so a failure leaves nothing
// half-written behind.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"

namespace dtf::pack {

struct WrittenArchive {
  std::string path;    // <dir>/<prefix><16 hex digits>.zip
  std::string sha256;  // of the whole archive
  uint64_t size = 0;
};

// Not thread-safe.
class ZipWriter {
 public:
  // `path` is the entry's name, as CheckEntryName (entry_name.h) allows
  // (InvalidArgument otherwise, or AlreadyExists for a second entry of one
  // name). `mode` is kModeExecutable or kModeFile.
  Status AddBytes(std::string path, std::string data, uint32_t mode);
  // The entry's bytes are read from `source` when the archive is written;
  // FailedPrecondition then if `source` changed size or time since this
  // call.
  Status AddFile(std::string path, std::string source, uint32_t mode);

  // Writes every entry added to <dir>/<prefix><the first 16 hex digits of
  // the archive's SHA-256>.zip, replacing a file of that name (which, by
  // its name, holds the same bytes). Creates `dir` when missing. Errors name
  // the archive or the entry's source.
  StatusOr<WrittenArchive> Write(const std::string& dir,
                                 std::string_view prefix) const;

 private:
  struct Entry {
    std::string path;
    uint32_t mode = 0;
    std::string data;    // when source is empty
    std::string source;  // a file read at Write
    int64_t source_size = 0;
    int64_t source_mtime_ns = 0;
  };
  Status Add(Entry entry);
  std::vector<Entry> entries_;
};

}  // namespace dtf::pack
