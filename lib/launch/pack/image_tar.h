// The tar and gzip pieces of an OCI image (dtf pack image): a POSIX ustar
// writer whose output depends only on its entries (sorted by path, mtime 0,
// uid and gid 0, no user or group names), a reader for what it and the OCI
// layout tools write, and gzip without a timestamp or file name.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"

namespace dtf::pack {

struct TarEntry {
  enum class Type { kFile, kDirectory, kSymlink };
  // Relative, '/'-separated, no trailing '/'; at most 255 bytes split as
  // ustar allows (a prefix of at most 155 and a name of at most 100).
  std::string path;
  Type type = Type::kFile;
  uint32_t mode = 0644;
  std::string data;    // kFile: the contents
  std::string target;  // kSymlink: where it points
};

// The tar file of `entries`, sorted by path, every missing parent directory
// added (mode 0755). InvalidArgument naming the entry for a path ustar
// cannot hold, an absolute or ".."-bearing path, or two entries of one path.
StatusOr<std::string> WriteTar(std::vector<TarEntry> entries);

// The entries of a tar file (ustar or GNU; pax headers are skipped). DataLoss
// "<name>: ..." for a truncated or corrupt archive (bad header checksum).
StatusOr<std::vector<TarEntry>> ReadTar(std::string_view tar,
                                        std::string_view name);

// gzip (RFC 1952) of `data` at zlib's default level, with mtime 0 and no
// file name: the same bytes always give the same output (with one zlib).
StatusOr<std::string> Gzip(std::string_view data);
// Errors: DataLoss "<name>: ..." for data that is not gzip or is cut short.
StatusOr<std::string> Gunzip(std::string_view data, std::string_view name);

}  // namespace dtf::pack
