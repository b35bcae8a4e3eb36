// A parameter server's state and logic, free of any transport: its
// partition (partition.h) of every variable of the job's model and their
// optimizer slots, the global step, and the job's training mode:
//   async  each push is applied on arrival (one update per push); with
//          max_staleness = k, gradients computed more than k updates ago are
//          dropped.
//   sync   a step's gradients are summed on arrival, until
//          replicas_to_aggregate workers (default: every live worker)
//          pushed, then averaged and applied once; late gradients of an
//          applied step are dropped as stale. Workers that finished, or were
//          silent for heartbeat_timeout, are not waited for, so a dead worker
//          never hangs a step.
// Pieces come in and go out as plain views of little-endian float32 bytes,
// so that a transport hands over what it decoded straight from the wire and
// lets the store copy answers straight into its own buffers.
// Thread-safe: a transport calls it from many threads.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/memory_limit.h"
#include "lib/base/status.h"
#include "lib/data/job_file.h"
#include "lib/kernels/context.h"
#include "lib/kernels/optimizer.h"
#include "lib/runtime/ps/param_store_types.h"
#include "lib/runtime/ps/partition.h"

namespace dtf::runtime {

struct StoreShard;

struct StoreOptions {
  int index = 0;  // this PS
  int num_ps = 1;
  int num_workers = 1;
  // Workers from this one on are reserved slots not started at launch
  // (the profile's max_workers): no sync step waits for one until it
  // pushes. 0: every worker started.
  int started_workers = 0;
  int threads = 1;  // for the optimizers' updates
  // A checkpoint (checkpoint.h) to start from instead of the initial
  // values: this PS's rows of every variable and optimizer slot, and the
  // global step. Empty: none (default).
  std::string restore_from;
  // Tests only: SaveShard waits this long once its data file is open under
  // its temporary name, before it writes, so that a test can kill the PS
  // mid-write with a small model. 0: no wait (default).
  int64_t save_delay_ms = 0;
  // The memory limit the PS runs under (ReadMemoryLimit), or none: a
  // partition whose tables and optimizer slots would take the PS within
  // kMemoryHeadroom of it is refused (ResourceExhausted naming the table
  // and the rows it holds) before it is made, instead of an OOM kill.
  std::optional<MemoryLimit> memory_limit;
};

// What a PS keeps free below its memory limit: a tenth of it, at least
// 64 MiB (requests, replies and the checkpoint's buffers).
int64_t MemoryHeadroom(int64_t limit_bytes);

class ParamStore {
 public:
  // Builds the job's model (as every task does, from train.seed), keeps this
  // PS's partition of each variable, and restores options.restore_from.
  static StatusOr<std::unique_ptr<ParamStore>> Create(
      const JobFile& job, const StoreOptions& options);
  ~ParamStore();

  // Takes a worker's gradients. Every piece is checked (names, ownership,
  // sizes, ids, offsets, in checked arithmetic) before anything changes: a
  // push with one bad piece is refused whole (InvalidArgument naming the
  // variable and this PS) and changes nothing. Then applied (async), added
  // to the step's sums (sync) or dropped as stale. header.position is then
  // committed as the worker's input position: at once when applied (async)
  // or dropped, with its step's update when summed (sync); so every
  // position a gather or saved shard reports is of batches whose gradients
  // are in the variables it hands out, or were dropped. After an aggregated
  // sync step failed to apply, every push is refused with that error; after
  // Shutdown, Aborted saying why (the worker's run is over).
  StatusOr<PushResult> Push(const PushHeader& header,
                            std::span<const PieceView> pieces);

  // Hands `request`'s rows to `sink`, once the global step reached its
  // min_step; Aborted when Shutdown came first. `cancelled`, when given, is
  // polled while waiting (at least every 100 ms, with the store's lock held):
  // once it returns true the gather gives up with Cancelled. InvalidArgument
  // for a variable or row that is not here; nothing has gone to the sink then.
  StatusOr<GatherResult> Gather(const GatherRequest& request, PieceSink& sink,
                                const std::function<bool()>& cancelled = {});

  // Writes this PS's shard of a sharded checkpoint (sharded_format.h)
  // once the global step reached request.min_step: its rows of every
  // variable, optimizer slot and update count, as slices of the whole
  // variables in the partition's order, to the data file's temporary name
  // (shard_writer.h), synced. Pushes and pulls wait meanwhile: the shard
  // is of one global step. Errors name the file; Aborted after Shutdown
  // when the step never came.
  StatusOr<SaveShardResult> SaveShard(const SaveShardRequest& request);

  // Worker `worker` finished: no sync step waits for it any more.
  void WorkerDone(int worker);
  // Ends every wait; WaitForShutdown returns true from now on.
  void Shutdown(std::string_view reason);
  // Applies a sync step whose missing workers have since finished or gone
  // silent. Called periodically by whoever serves the store.
  void Tick();
  // Waits up to `timeout` for Shutdown; true once it came.
  bool WaitForShutdown(std::chrono::milliseconds timeout);
  std::string shutdown_reason() const;
  int64_t global_step() const;
  int index() const { return options_.index; }
  // How long each pull that waited for a step (a sync step's barrier: the
  // step's other pushes) waited, in milliseconds, oldest first; at most
  // kMaxBarrierWaits are kept (the first ones).
  static constexpr size_t kMaxBarrierWaits = size_t{1} << 20;
  std::vector<float> barrier_waits_ms() const;

 private:
  // The error of a push, or of a pull for a step, after Shutdown.
  Status ShutDownLocked() const;
  using Shard = StoreShard;
  ParamStore(const JobFile& job, const StoreOptions& options);
  // From a checkpoint.dtf (Restore) or a sharded checkpoint's prefix
  // (RestoreSharded: this PS's rows, read from the shards of any number of
  // PS, streaming); param_store_restore.cc.
  Status Restore(const std::string& path);
  Status RestoreBundle(const std::string& path);
  Status RestoreSharded(const std::string& prefix);
  Shard* FindLocked(std::string_view name);
  // OK when every piece names a variable of this PS and holds rows it
  // owns, in sizes that add up; nothing is changed. REQUIRES: mu_ held.
  Status CheckPiecesLocked(std::span<const PieceView> pieces);
  // Adds every piece to its shard's sum. REQUIRES: mu_ held;
  // CheckPiecesLocked(pieces) OK.
  void AccumulateLocked(std::span<const PieceView> pieces);
  // Applies `scale` times the sums to the variables, clears them and
  // advances the global step. REQUIRES: mu_ held.
  Status ApplySumsLocked(float scale);
  Status ApplyShardLocked(Shard& s, float scale);
  // Commits `position` for input shard `shard` unless a later one is
  // committed: a shard's reading only moves on, and a push that comes late
  // (its worker stopped meanwhile, the shard read on by another) does not
  // take the position back.
  void CommitPositionLocked(int shard,
                            const std::optional<InputPosition>& position);
  void ApplyPendingLocked();
  // Applies the pending sync step when every worker it waits for pushed.
  void MaybeApplyLocked();
  int RequiredLocked() const;
  void SeenLocked(int worker);
  Status CheckGatherLocked(const GatherRequest& request);
  bool EmitLocked(Shard& s, const GatherRequest::Sparse* sparse,
                  bool with_slots, PieceSink& sink, GatherResult* result);

  const StoreOptions options_;
  const TrainMode mode_;
  const int64_t replicas_to_aggregate_;
  const int64_t max_staleness_;
  const std::chrono::seconds heartbeat_timeout_;
  const Partition partition_;
  kernels::Context ctx_;
  std::unique_ptr<kernels::Optimizer> wide_optimizer_;
  std::unique_ptr<kernels::Optimizer> deep_optimizer_;

  mutable std::mutex mu_;
  // Notified at every step, and on Shutdown: the pulls that wait for a step.
  std::condition_variable step_cv_;
  // Notified on Shutdown only: WaitForShutdown's waiter (the task's main
  // thread) is not woken by every step.
  std::condition_variable shutdown_cv_;
  std::vector<std::unique_ptr<Shard>> shards_;
  int64_t global_step_ = 0;
  // The first error of applying an aggregated sync step; every later push
  // is refused with it.
  Status apply_error_;
  // Sync mode: the workers whose gradients the sums of the current step
  // hold, and the input position each pushed with them (committed with the
  // step).
  std::vector<int> pending_workers_;
  std::vector<std::optional<InputPosition>> pending_positions_;
  std::vector<int> pending_shards_;  // the input shard of each
  // Each worker's committed input position (Push).
  WorkerPositions positions_;
  std::vector<std::chrono::steady_clock::time_point> last_seen_;
  std::vector<bool> done_;
  bool shutdown_ = false;
  std::string shutdown_reason_;
  std::vector<float> barrier_waits_ms_;
};

}  // namespace dtf::runtime
