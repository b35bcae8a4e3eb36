#include "lib/data/shard_files.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "lib/base/strings.h"

namespace dtf {
namespace fs = std::filesystem;

std::string ShardFileName(int shard, int shards, Compression compression) {
  return fmt::format("part-{:05d}-of-{:05d}.tfrecord{}", shard, shards,
                     CompressionSuffix(compression));
}

std::vector<std::string> ExistingShardFiles(const std::string& dir) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.starts_with("part-") &&
        name.find(".tfrecord") != std::string::npos) {
      found.push_back(entry.path().string());
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace dtf
