// Names and encodings of sharded checkpoints, shared by their writers and
// readers (docs/formats/checkpoint.md): TensorFlow's tensor-bundle layout
// PREFIX.data-0000k-of-0000n (one data file a parameter server, and the
// chief's last) and one merged PREFIX.index, where PREFIX is
// <output_dir>/model.ckpt-<step>. A variable split over the parameter
// servers is saved as TensorFlow saves a partitioned variable: an entry of
// the whole variable listing its slices (rows of dimension 0), and each
// slice under the key EncodeTensorNameSlice gives it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/base/status.h"

namespace dtf::runtime {

inline constexpr std::string_view kShardedCheckpointName = "model.ckpt";
// TensorFlow's CheckpointState text file (tf.train.latest_checkpoint).
inline constexpr std::string_view kShardedStateFile = "checkpoint";
// Written by the chief: the number of parameter servers whose partition
// (lib/runtime/ps/partition.h) the slices follow.
inline constexpr std::string_view kShardedNumPsEntry = "meta/num_ps";
// The suffix of a data file until the checkpoint is committed.
inline constexpr std::string_view kShardedTempSuffix = ".tmp";

// TensorFlow's DataType values of the entries dtf writes. Strings are
// written as uint8 vectors.
enum class TfDtype : int { kFloat = 1, kUint8 = 4, kInt64 = 9 };

// A sharded run's best model: a bundle of its variables alone (no
// optimizer slots) at "<dir>/checkpoint-best/model", the directory
// replaced whole at each new best.
inline constexpr std::string_view kShardedBestDir = "checkpoint-best";
std::string ShardedBestPrefix(const std::string& dir);

// "<dir>/model.ckpt-<step>".
std::string ShardedCheckpointPrefix(const std::string& dir, int64_t step);
// PREFIX.data-<shard>-of-<num_shards>, 5 digits each.
std::string ShardedDataPath(std::string_view prefix, int shard, int num_shards);
std::string ShardedIndexPath(std::string_view prefix);

// What an index says of one key: a tensor's dtype and shape, and where its
// bytes are; or, for a sliced variable, its slices (rows [start, start +
// length) of dimension 0, the other dimensions whole).
struct ShardedEntry {
  struct Slice {
    int64_t start = 0;
    int64_t length = 0;
  };
  TfDtype dtype = TfDtype::kFloat;
  std::vector<int64_t> shape;
  int shard = 0;
  int64_t offset = 0;
  int64_t size = 0;
  uint32_t crc32c = 0;  // masked
  std::vector<Slice> slices;
};

// The serialized BundleEntryProto of `entry`, and back (DataLoss naming
// `where` and the key when it does not parse).
std::string SerializeShardedEntry(const ShardedEntry& entry);
StatusOr<ShardedEntry> ParseShardedEntry(std::string_view bytes,
                                         std::string_view where,
                                         std::string_view key);
// The BundleHeaderProto of a bundle of `num_shards` data files.
std::string ShardedHeader(int num_shards);
// Its shard count; DataLoss naming `where` when malformed.
StatusOr<int> ParseShardedHeader(std::string_view bytes,
                                 std::string_view where);

// TensorFlow's checkpoint::EncodeTensorNameSlice for the slice of rows
// [start, start + length) of dimension 0 of a tensor of rank `rank` (the
// other dimensions whole): the key its bytes are saved under.
std::string EncodeTensorNameSlice(std::string_view name, int rank,
                                  int64_t start, int64_t length);

}  // namespace dtf::runtime
