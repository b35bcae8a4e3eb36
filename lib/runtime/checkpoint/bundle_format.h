// Constants of the tensor bundle format, shared by its reader and writer
// (docs/formats/checkpoint.md).
#pragma once

#include <cstdint>
#include <string_view>

namespace dtf::runtime::bundle_format {

// The file starts with these 8 bytes, then a uint32 version and a uint32
// entry count.
inline constexpr std::string_view kMagic = "DTFBNDL\x01";
inline constexpr uint32_t kVersion = 1;
inline constexpr size_t kHeaderSize = 16;
// Each entry: uint16 name length, name, uint8 type, uint8 rank, rank int64
// dimensions, uint64 byte count, data. The file ends with the masked CRC-32C
// (as TFRecord masks it) of every byte before it.
enum class EntryType : uint8_t { kFloat32 = 1, kInt64 = 2, kBytes = 3 };
inline constexpr size_t kMaxRank = 8;
inline constexpr size_t kFooterSize = 4;

}  // namespace dtf::runtime::bundle_format
