// The runtime archive a launch ships (SSH, Spark), packed once for a binary and
// its libraries as they are (packing a debug build takes seconds): later
// launches find it through <out>/env-cache/<inputs key>.json, which names
// the archive with its size and SHA-256. An entry is trusted only while the
// archive still has both; anything else is packed again.
#pragma once

#include <optional>
#include <string>

#include "lib/base/status.h"
#include "lib/launch/pack/pack_env.h"

namespace dtf::pack {

// The archive a cache entry file names, when that file parses and the
// archive is there with the recorded size and SHA-256 (hashed again here,
// as pack hashes it). nullopt otherwise; when the entry parsed but its
// archive does not match, `*note` (when not null) says so, naming the
// archive ("" when there was nothing to say).
std::optional<PackResult> ReadEnvCache(const std::string& cache_file,
                                       std::string* note);

// Records `packed` in `cache_file` (written atomically).
Status WriteEnvCache(const std::string& cache_file, const PackResult& packed);

// The runtime archive (dtf pack env of this very binary) under `out`, from
// the cache when ReadEnvCache trusts it, else packed and cached. `*note`
// as for ReadEnvCache.
StatusOr<PackResult> PackEnvCached(const std::string& out,
                                   const std::string& search_path,
                                   std::string* note);

}  // namespace dtf::pack
