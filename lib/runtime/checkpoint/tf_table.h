// The LevelDB-format table of a TensorFlow tensor bundle's .index file
// (docs/formats/savedmodel.md, docs/formats/checkpoint.md): its writer and
// its reader.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/base/status.h"

namespace dtf::runtime {

// A LevelDB table without compression or filters; blocks of at most about
// `block_size` bytes with a restart point every 16 entries; each block
// followed by a type byte (0) and the masked CRC-32C of block and type; a
// footer of the meta-index and index block handles (varints) padded to 40
// bytes, then the magic 0xdb4775248b80fb57. `entries` must be sorted by
// key, keys distinct.
std::string MakeTfTable(
    const std::vector<std::pair<std::string, std::string>>& entries,
    size_t block_size = 256 * 1024);

// Every entry of a table as MakeTfTable (or TensorFlow) writes it, in key
// order. Block checksums are verified; compressed blocks are refused.
// DataLoss naming `path` and the byte offset for a malformed table.
StatusOr<std::vector<std::pair<std::string, std::string>>> ParseTfTable(
    std::string_view file, const std::string& path);

}  // namespace dtf::runtime
