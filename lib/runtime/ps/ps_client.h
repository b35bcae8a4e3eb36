// A worker's view of the parameter servers: pulls the variables (dense ones
// whole, sparse ones only the rows asked for) and pushes gradients, each
// call to every PS at once (one thread per PS), each with a deadline. Pulls,
// pushes and steps travel on one long-lived Session stream per PS
// (session_stream.h: gRPC's, ps_stream.h, or with TLS one of dtf's own
// under the run's mutual TLS, ps_tls_stream.h), the pieces' values written from
// and read into tensor memory without intermediate copies (tensor_wire.h). Not
// thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/kernels/optimizer.h"
#include "lib/kernels/tensor.h"
#include "lib/runtime/ps/fanout.h"
#include "lib/runtime/ps/param_store_types.h"
#include "lib/runtime/ps/partition.h"
#include "lib/runtime/ps/rpc_auth.h"
#include "lib/runtime/ps/session_stream.h"
#include "proto/dtf.grpc.pb.h"

namespace dtf::runtime {

class PsClient {
 public:
  // `worker`: this worker's index (-1 for a task that only reads).
  // `cancel`, when not null, is the task's stop flag (outliving this): a
  // pull, push or step in flight when it is set ends at once, Cancelled;
  // one begun after it gets at most SessionStream::kStoppingTimeout.
  PsClient(const std::vector<std::string>& addresses, RunCredentials creds,
           int worker, std::chrono::milliseconds timeout,
           const std::atomic<bool>* cancel = nullptr);

  struct DenseVar {
    std::string name;
    kernels::Tensor* out;  // already shaped like the variable
    // With Pull(..., slots = true): receives the variable's optimizer slots
    // (created for the variable's shape); may be null otherwise.
    kernels::OptimizerState* state = nullptr;
  };
  struct SparseVar {
    std::string name;
    // Sorted, unique global row ids; out is resized to [ids.size(), cols].
    // With `all`, every row: out is resized to [rows, cols].
    const std::vector<int64_t>* ids = nullptr;
    bool all = false;
    int64_t rows = 0;
    int64_t cols = 1;
    kernels::Tensor* out;
    // As DenseVar::state; only with `all`.
    kernels::OptimizerState* state = nullptr;
  };
  // Fills every output. `min_step`: each PS answers once its global step
  // reached it (sync mode). steps()[p] is then PS p's global step. `slots`:
  // also every optimizer slot and update count, into each var's `state`
  // (checkpoints).
  Status Pull(const std::vector<DenseVar>& dense,
              const std::vector<SparseVar>& sparse, int64_t min_step,
              bool slots = false);
  const std::vector<int64_t>& steps() const { return steps_; }
  // Each worker's committed input position (ParamStore::Push) as the last
  // Pull with `slots` or SaveShards found it: for each worker the earliest
  // any PS reported, since a push one PS applied and another not yet is
  // not whole in the variables; nullopt where no PS reported one.
  const WorkerPositions& positions() const { return positions_; }

  // Pushes pieces[p] to PS p, each tagged with steps()[p]. Returns whether
  // every PS applied (or queued) them, and the largest global step seen.
  struct PushResult {
    bool applied = true;
    int64_t global_step = 0;
  };
  StatusOr<PushResult> Push(std::vector<std::vector<rpc::TensorPiece>> pieces,
                            int64_t examples, double loss);

  // A push and the next pull in one call per PS: pushes pieces[p] to PS p
  // (tagged with steps()[p]), then fills `dense` and `sparse` as Pull does,
  // unless both are null. `sync`: each PS answers once it applied the step
  // the push was tagged with. steps() is then each PS's global step.
  // `position`: the input position after the batch pushed, in input shard
  // `shard` (-1: this worker's own), which each PS commits with the
  // gradients.
  StatusOr<PushResult> Step(
      std::vector<std::vector<rpc::TensorPiece>> pieces, int64_t examples,
      double loss, const std::vector<DenseVar>* dense,
      const std::vector<SparseVar>* sparse, bool sync,
      const std::optional<InputPosition>& position = std::nullopt,
      int shard = -1);
  // Has every PS p write shard p of the sharded checkpoint at `prefix`
  // (ParamStore::SaveShard) once its global step reached `min_step`, all
  // at once; `num_shards` counts the chief's shard too. Returns what each
  // wrote (its step and index entries); steps() is then each PS's step.
  // Each call may take `timeout` (a shard of a large table takes a while).
  // `variables_only`: SaveShardRequest's.
  StatusOr<std::vector<rpc::SaveShardResponse>> SaveShards(
      const std::string& prefix, int num_shards, int64_t min_step,
      std::chrono::milliseconds timeout, bool variables_only = false);
  // Tells every PS that this worker is done. Once the cancel flag is set,
  // best effort: a PS that is gone fails it at once, one that does not
  // answer within a second too.
  Status WorkerDone();
  // Sends every PS home. A PS that is already gone (its port closed) or
  // going (it cancels the call as its server stops: it heard the run end
  // from its heartbeats first) counts as sent home; one that does not
  // answer within 10 s is an error naming it.
  Status Shutdown(const std::string& reason);

  // Every call begun from now on ends by `t` at the latest, whatever the
  // timeout (a caller that waits for a PS within a deadline of its own);
  // time_point::max() lifts it.
  void NotAfter(std::chrono::steady_clock::time_point t);

  int num_ps() const { return int(stubs_.size()); }
  const Partition& partition() const { return partition_; }

 private:
  std::vector<std::string> addresses_;
  std::vector<std::unique_ptr<rpc::ParameterServer::Stub>> stubs_;
  std::vector<std::unique_ptr<SessionStream>> streams_;
  RunCredentials creds_;
  int worker_;
  const std::atomic<bool>* cancel_;
  std::chrono::milliseconds timeout_;
  Partition partition_;
  std::vector<int64_t> steps_;
  WorkerPositions positions_;
  Fanout fanout_;
};

}  // namespace dtf::runtime
