// The batches of a training loop, one ahead: while step k computes, batch
// k+1 is read and transformed — on a thread of its own with prefetching,
// else when the loop asks for it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "lib/base/status.h"
#include "lib/data/input_pipeline.h"
#include "lib/kernels/context.h"
#include "lib/runtime/model/feature_layer.h"

namespace dtf::runtime {

// A batch made ready for a step: read and transformed.
struct PreparedBatch {
  Status status;
  bool more = false;
  // The input's position after this batch was read, in input shard
  // `shard` (-1: the worker's own; see sharded_input.h).
  InputPosition position;
  int shard = -1;
  Batch batch;
  ModelInputs inputs;
  // The rows of each sparse input the batch touches (sorted unique global
  // ids) when the update compacted the batch (update_ps.cc); else empty.
  std::vector<std::vector<int64_t>> unique;
};

class BatchQueue {
 public:
  // `prepare` fills a batch (reads, transforms); with `prefetch` it runs on
  // the queue's own thread. `ctx`: the compute context (its batches' host
  // buffers are pinned for it).
  BatchQueue(const kernels::Context& ctx,
             std::function<void(PreparedBatch*)> prepare, bool prefetch);
  // Waits for a batch in preparation.
  ~BatchQueue();
  BatchQueue(const BatchQueue&) = delete;
  BatchQueue& operator=(const BatchQueue&) = delete;

  // The first batch, read now; the error that preparing it met.
  StatusOr<PreparedBatch*> First();
  // The batch after the current one (the current one has more == true);
  // the error that preparing it met.
  StatusOr<PreparedBatch*> Next();
  // The batch Next() returned becomes the current one; with prefetching,
  // the one after it is begun.
  PreparedBatch* Advance();

 private:
  void Start(PreparedBatch* out);
  void Wait();
  void Loop();

  std::function<void(PreparedBatch*)> prepare_;
  const bool prefetch_;
  PreparedBatch slots_[2];
  PreparedBatch* cur_ = &slots_[0];
  PreparedBatch* next_ = &slots_[1];
  bool next_ready_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  PreparedBatch* job_ = nullptr;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace dtf::runtime
