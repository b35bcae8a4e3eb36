// Reads a zip archive entry by entry over libzip. Internal to
// lib/launch/pack; ListArchive and UnpackArchive (unpack.h) are the public
// face.
#pragma once

#include <zip.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"

namespace dtf::pack {

// Not thread-safe. Errors name the archive and, where one is involved, the
// entry: "<archive>: <entry>: ...".
class ArchiveReader {
 public:
  struct Entry {
    std::string name;
    uint64_t size = 0;
    // The permission bits of a Unix entry; 0 for entries made elsewhere.
    uint32_t mode = 0;
    // Whether it is a plain file (not a directory or a symbolic link).
    bool regular = true;
  };

  // NotFound etc. from the file system; DataLoss for a file that is not a
  // consistent zip archive.
  static StatusOr<std::unique_ptr<ArchiveReader>> Open(const std::string& path);
  ~ArchiveReader();

  const std::string& path() const { return path_; }
  // In the archive's order.
  const std::vector<Entry>& entries() const { return entries_; }

  // DataLoss "<archive>: <entry>: ..." for the first entry whose name
  // CheckEntryName (entry_name.h) refuses: what is checked before any
  // entry is written out under its name.
  Status CheckEntryNames() const;

  // Passes entry `index`'s bytes to `sink` in chunks, checking the CRC.
  Status Read(size_t index,
              const std::function<Status(std::string_view)>& sink) const;
  // The whole entry; refuses entries over `limit` bytes (DataLoss).
  StatusOr<std::string> ReadAll(size_t index, uint64_t limit) const;

 private:
  ArchiveReader(std::string path, zip_t* archive)
      : path_(std::move(path)), archive_(archive) {}
  std::string path_;
  zip_t* archive_;
  std::vector<Entry> entries_;
};

}  // namespace dtf::pack
