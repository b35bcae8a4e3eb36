// Where a reader of the training input pipeline has got to in its stream
// of records, for resuming from a checkpoint. InputPipeline
// (lib/data/input_pipeline.h) reports it; RecordStream
// (lib/data/record_stream.h) keeps it; docs/input-pipeline.md specifies it.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace dtf {

// A place in a reader's stream of records, for resuming from a checkpoint.
struct InputPosition {
  // Epochs completed.
  int64_t epoch = 0;
  // Position in this epoch's file order: the reader's files (sorted, or
  // shuffled per epoch when shuffling; the order is a function of the seed
  // and the epoch).
  int64_t file = 0;
  // Records of that file read, whether this reader keeps them or not.
  int64_t record = 0;
  // Records read this epoch over all files: the global index the sharding
  // rule gives the next record.
  int64_t epoch_record = 0;
  // With shuffling: records this reader has yielded this epoch. The
  // shuffle is a function of the seed, the epoch and the reader, so a
  // stream that reads the epoch again from its start and drops this many
  // stands where this one stood, its shuffle buffer included. Without
  // shuffling it stays 0 (the read position is exact by itself); -1: not
  // known (a position from a checkpoint that did not record it).
  int64_t emitted = 0;

  bool operator==(const InputPosition&) const = default;
};

// The numbers of a position on the wire (heartbeats, pushes, pulls): epoch,
// file, record, epoch_record, emitted.
inline constexpr size_t kInputPositionNumbers = 5;
inline std::array<int64_t, kInputPositionNumbers> PositionNumbers(
    const InputPosition& p) {
  return {p.epoch, p.file, p.record, p.epoch_record, p.emitted};
}
// From those five numbers, or the first four (emitted then unknown: -1);
// nullopt for another count.
inline std::optional<InputPosition> PositionFromNumbers(
    std::span<const int64_t> n) {
  if (n.size() != kInputPositionNumbers && n.size() != 4) return std::nullopt;
  return InputPosition{n[0], n[1], n[2], n[3], n.size() == 5 ? n[4] : -1};
}

// An input shard a worker reads (docs/launch.md, *Elastic workers*): a
// parameter-server run's training records are sharded by the run's
// workers, worker i reading shard i; the chief hands the shard of a worker
// taken for dead on to a live one, which reads it on from `start`.
struct InputShard {
  int shard = 0;
  InputPosition start;
  // Which handing of the shard this is: the chief numbers each anew (0:
  // a worker's own shard, never handed on). A worker that reads the shard
  // under another number lost it and got it back while it did not look:
  // it reads on from `start`, not from where it was.
  uint64_t grant = 0;

  bool operator==(const InputShard&) const = default;
};

// The shards the chief has a worker read, as it last said: nullopt while
// it has handed none on to or from the worker (its own alone); `pending`
// while a shard is being released to it (its input has not ended, even
// while it reads none).
struct AssignedShards {
  std::optional<std::vector<InputShard>> shards;
  bool pending = false;
};

}  // namespace dtf
