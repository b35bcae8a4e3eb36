// One data file of a sharded checkpoint (sharded_format.h), written front
// to back as its tensors come, never holding more than the one in hand: a
// parameter server's rows of every variable it holds, or the chief's
// training state. The index entries of what it wrote go to whoever merges
// the checkpoint's index (sharded_checkpoint.h).
// Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/base/file.h"
#include "lib/base/status.h"
#include "lib/runtime/checkpoint/bundle.h"
#include "lib/runtime/checkpoint/sharded_format.h"

namespace dtf::runtime {

// Index entries: key and serialized BundleEntryProto. A sliced variable's
// entry lists the slices this shard wrote; merging joins them.
using ShardedIndexEntries = std::vector<std::pair<std::string, std::string>>;

class ShardWriter {
 public:
  // Creates (or truncates) the shard's data file under its temporary name,
  // ShardedDataPath(prefix, shard, num_shards) + kShardedTempSuffix.
  static StatusOr<std::unique_ptr<ShardWriter>> Open(std::string prefix,
                                                     int shard, int num_shards);

  // A whole tensor of `shape` whose little-endian bytes are `bytes`.
  Status Add(std::string key, TfDtype dtype, std::span<const int64_t> shape,
             std::string_view bytes);
  // Rows [start, start + rows) of dimension 0 of the tensor `full_key` of
  // `full_shape` (its other dimensions whole), whose bytes are `bytes`.
  // Rows == 0 writes nothing.
  Status AddSlice(const std::string& full_key, TfDtype dtype,
                  std::span<const int64_t> full_shape, int64_t start,
                  int64_t rows, std::string_view bytes);
  // Every entry of `bundle`, whole: float32 as float, int64 as int64,
  // bytes as uint8 vectors.
  Status AddBundle(const Bundle& bundle);
  // Syncs and closes the file; the index entries of everything added.
  StatusOr<ShardedIndexEntries> Finish();

  const std::string& temp_path() const { return file_->name(); }

 private:
  ShardWriter(std::unique_ptr<WritableFile> file, int shard)
      : file_(std::move(file)), shard_(shard) {}

  std::unique_ptr<WritableFile> file_;
  int shard_;
  int64_t offset_ = 0;
  ShardedIndexEntries entries_;
};

}  // namespace dtf::runtime
