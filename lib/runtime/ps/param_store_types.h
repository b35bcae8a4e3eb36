// What goes into and out of a ParamStore (param_store.h): the pieces of a
// push and of a gather's answer as plain views of little-endian float32
// bytes, and the headers and results around them. Free of any transport.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/data/input_position.h"

namespace dtf::runtime {

// Each input shard's committed input position (ParamStore::Push), at
// index i for shard i (worker i's own); nullopt: none committed yet.
using WorkerPositions = std::vector<std::optional<InputPosition>>;

// One pushed gradient piece, as it came off the wire. Dense pieces hold
// `rows` consecutive rows from `row_offset`; sparse ones the rows `ids`
// (global row ids, ids.size() == rows). `values` holds rows x cols
// little-endian float32, at any alignment. Nothing is trusted.
struct PieceView {
  std::string_view name;
  std::string_view slot;  // gradients have none: a non-empty slot is refused
  int64_t row_offset = 0;
  int64_t rows = 0;
  std::span<const int64_t> ids;
  std::span<const std::byte> values;
};

struct PushHeader {
  int worker = 0;
  // The global step the gradients were computed at.
  int64_t step = 0;
  // The worker's input position after the batch of these gradients;
  // nullopt: not told (nothing is committed for it).
  std::optional<InputPosition> position;
  // The input shard the batch came from (the position's); -1: the
  // worker's own.
  int shard = -1;
};

struct PushResult {
  // False: the gradients were stale and dropped (sync mode: also a second
  // push of one worker for the same step).
  bool applied = false;
  int64_t global_step = 0;
};

// What a pull asks for. Dense variables: every row this PS holds. Sparse
// ones: the rows `ids` (each must be this PS's), or with `all` every row it
// holds.
struct GatherRequest {
  struct Sparse {
    std::string_view name;
    std::span<const int64_t> ids;
    bool all = false;
  };
  std::vector<std::string_view> dense;
  std::vector<Sparse> sparse;
  int worker = -1;  // counted as a sign of life when it is a worker
  // Wait until the global step reached min_step. A min_step beyond the next
  // step means this PS went back (restarted from a checkpoint) since the
  // worker last saw it: the current values are given at once.
  int64_t min_step = 0;
  // Also every optimizer slot of the variables asked for (checkpoints).
  bool slots = false;
};

// One piece of a gather's answer: at most kMaxPieceBytes (tensor_pieces.h)
// of values, as AppendDensePieces / AppendSparsePieces split a variable.
struct PieceInfo {
  std::string_view name;
  std::string_view slot;           // empty: the variable's values
  std::span<const int64_t> shape;  // of the whole variable
  int64_t row_offset = 0;          // dense pieces
  int64_t rows = 0;
  int64_t cols = 0;
  std::span<const int64_t> ids;  // sparse pieces: rows ids, in order
  // The views hold only for the call of PieceSink::Piece they come with.
};

// Where a gather's pieces go. Called with the store's lock held: it must
// not call back into the store.
class PieceSink {
 public:
  virtual ~PieceSink() = default;
  // Memory for rows x cols little-endian float32 (any alignment) that the
  // store fills before its next call; nullptr abandons the gather
  // (Cancelled).
  virtual std::byte* Piece(const PieceInfo& piece) = 0;
};

// A sharded checkpoint's shard of this PS (param_store_save.cc).
struct SaveShardRequest {
  std::string prefix;  // the checkpoint's path prefix
  int shard = 0;       // this PS's data file
  int num_shards = 1;
  // Saved once the global step reached it (as GatherRequest::min_step).
  int64_t min_step = 0;
  // Counted as a sign of life, before and after the write, when it is a
  // worker (the chief): a long write is no silence of the chief's.
  int worker = -1;
  // The variables alone under their own names, without optimizer slots
  // or update counts (a SavedModel's variables, a best model).
  bool variables_only = false;
};

struct SaveShardResult {
  int64_t global_step = 0;
  // Index entries: key and serialized BundleEntryProto.
  std::vector<std::pair<std::string, std::string>> entries;
  // Every worker's committed input position at global_step.
  WorkerPositions positions;
};

struct GatherResult {
  int64_t global_step = 0;
  // With GatherRequest::slots: the optimizer's update count of each
  // trainable variable asked for (Adam's bias correction).
  std::map<std::string, int64_t, std::less<>> slot_steps;
  // With GatherRequest::slots: every worker's committed input position at
  // global_step, read with the variables.
  WorkerPositions positions;
};

}  // namespace dtf::runtime
