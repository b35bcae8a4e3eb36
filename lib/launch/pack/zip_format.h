// The fixed fields of dtf's archives (docs/pack.md), shared by the writer
// and the readers.
#pragma once

#include <cstdint>

namespace dtf::pack {

// Every entry's MS-DOS modification time: 1980-01-01 00:00:00, the earliest
// a zip file can hold.
inline constexpr uint16_t kDosDate = (0 << 9) | (1 << 5) | 1;
inline constexpr uint16_t kDosTime = 0;

// The two permission sets an entry may have.
inline constexpr uint32_t kModeExecutable = 0755;
inline constexpr uint32_t kModeFile = 0644;

// The manifest's name inside every archive.
inline constexpr char kManifestName[] = "manifest.json";

}  // namespace dtf::pack
