// Sharded checkpoints (sharded_format.h, docs/formats/checkpoint.md): the
// chief's commit of one, the generations of an output directory, and a
// reader that streams a checkpoint's tensors from its data files.
//
// A checkpoint is complete or absent: every shard first writes its data
// file under a temporary name and syncs it; then the chief commits — it
// takes away the index of an earlier checkpoint of the same step, renames
// every data file into place, writes the merged PREFIX.index (temporary
// file, fsync, rename) and TensorFlow's `checkpoint` state file, and only
// then removes the oldest generations beyond `keep` and the files of
// writes that never committed. A checkpoint is the set of files whose
// PREFIX.index exists: a crash at any point leaves the one before whole.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/file.h"
#include "lib/base/status.h"
#include "lib/kernels/tensor.h"
#include "lib/runtime/checkpoint/bundle.h"
#include "lib/runtime/checkpoint/shard_writer.h"
#include "lib/runtime/checkpoint/sharded_format.h"

namespace dtf::runtime {

// Commits the checkpoint of `step` in `dir` whose shard k wrote
// `shards[k]` (every data file under its temporary name). Errors name the
// file or the key; FailedPrecondition when a data file is missing (nothing
// was changed then) or two shards wrote one key.
Status CommitShardedCheckpoint(const std::string& dir, int64_t step,
                               const std::vector<ShardedIndexEntries>& shards,
                               int64_t keep);

// Commits the bundle at `prefix` whose shard k wrote `shards[k]` (every
// data file under its temporary name): the data files renamed into place,
// then the merged PREFIX.index (temporary file, fsync, rename), an earlier
// index at `prefix` taken away first. Errors as CommitShardedCheckpoint.
Status CommitShardedBundle(const std::string& prefix,
                           const std::vector<ShardedIndexEntries>& shards);

struct ShardedGeneration {
  std::string prefix;
  int64_t step = 0;
};
// The committed checkpoints of `dir` (those with an index), newest first
// (by the index's modification time, then the step).
std::vector<ShardedGeneration> ListShardedCheckpoints(const std::string& dir);

// Reads a committed sharded checkpoint. Thread-compatible.
class ShardedCheckpointReader {
 public:
  // Reads and checks PREFIX.index: DataLoss naming it when malformed.
  static StatusOr<std::unique_ptr<ShardedCheckpointReader>> Open(
      std::string prefix);

  const std::string& prefix() const { return prefix_; }
  int num_shards() const { return num_shards_; }
  // nullptr when absent.
  const ShardedEntry* Find(std::string_view key) const;

  // The bytes of an entry that is not sliced, checksum verified. DataLoss
  // naming the data file for a short read or a checksum mismatch.
  StatusOr<std::string> Read(std::string_view key) const;
  // The bytes of slice `slice` of the sliced entry `key`, handed to `chunk`
  // front to back in pieces of at most `chunk_bytes` (each a whole number
  // of rows when chunk_bytes holds at least one row), with their byte
  // offset in the slice; the checksum is verified at the end (DataLoss
  // then: `chunk` may have seen corrupt bytes, and the caller must drop
  // what it built).
  Status StreamSlice(
      std::string_view key, const ShardedEntry::Slice& slice,
      size_t chunk_bytes,
      const std::function<Status(int64_t offset, std::string_view bytes)>&
          chunk) const;
  // The whole float32 tensor `key`, sliced or not, checksums verified.
  // NotFound when there is none.
  StatusOr<kernels::Tensor> ReadFloats(std::string_view key) const;
  // Rows `rows` (of dimension 0, the others whole) of the float32 tensor
  // `key`, sliced or not, into `out` ([rows.size(), row size]), each read
  // with one positioned read from its data file: what is read of a table
  // larger than memory. A row's bytes are not checked against the entry's
  // checksum (it covers the whole slice). OutOfRange for a row the tensor
  // does not have; DataLoss for a short read.
  Status ReadRows(std::string_view key, std::span<const int64_t> rows,
                  float* out) const;
  // Every entry that is neither sliced nor a slice (what the chief wrote:
  // training state, normalizer statistics, meta entries) as a Bundle whose
  // path() is the prefix: float32 as tensors, int64 as lists, uint8 as
  // bytes.
  StatusOr<Bundle> ReadUnsliced() const;

 private:
  explicit ShardedCheckpointReader(std::string prefix)
      : prefix_(std::move(prefix)) {}
  struct SliceAt {
    ShardedEntry::Slice slice;
    const ShardedEntry* entry;  // where its bytes are
  };
  // The slices of the float tensor `key` by start (one, the whole, when
  // it is not sliced) and the floats of one of its rows.
  StatusOr<std::vector<SliceAt>> FloatSlices(std::string_view key,
                                             int64_t* row_floats) const;
  StatusOr<const RandomAccessFile*> Data(int shard) const;
  Status ReadRange(
      const ShardedEntry& e, std::string_view key, size_t chunk,
      const std::function<Status(int64_t, std::string_view)>& fn) const;

  std::string prefix_;
  int num_shards_ = 1;
  std::map<std::string, ShardedEntry, std::less<>> entries_;
  mutable std::map<int, std::unique_ptr<RandomAccessFile>> files_;
};

}  // namespace dtf::runtime
