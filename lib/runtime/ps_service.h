// A parameter server: holds its partition (partition.h) of every variable of
// the job's model, answers pulls and applies pushed gradients with the job's
// optimizers, in the job's mode:
//   async  each push is applied on arrival (one update per push); with
//          max_staleness = k, gradients computed more than k updates ago are
//          dropped.
//   sync   a step's gradients are summed until replicas_to_aggregate workers
//          (default: every live worker) pushed, then averaged and applied
//          once; late gradients of an applied step are dropped as stale.
//          Workers that finished, or were silent for heartbeat_timeout, are
//          not waited for, so a dead worker never hangs a step.
// Thread-safe: gRPC calls it from many threads.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/data/job_file.h"
#include "lib/kernels/context.h"
#include "lib/kernels/optimizer.h"
#include "lib/runtime/partition.h"
#include "lib/runtime/rpc_auth.h"
#include "proto/dtf.grpc.pb.h"

namespace dtf::runtime {

struct PsOptions {
  int index = 0;
  int num_ps = 1;
  int num_workers = 1;
  RunCredentials credentials;
  int threads = 1;
  // A checkpoint (checkpoint.h) to start from instead of the initial
  // values: this PS's rows of every variable and optimizer slot, and the
  // global step. Empty: none (default).
  std::string restore_from;
};

class PsService final : public rpc::ParameterServer::Service {
 public:
  // Builds the job's model (as every task does, from train.seed) and keeps
  // this PS's partition of each variable.
  static StatusOr<std::unique_ptr<PsService>> Create(const JobFile& job,
                                                     const PsOptions& options);
  ~PsService() override;

  grpc::Status Pull(grpc::ServerContext* context,
                    const rpc::PullRequest* request,
                    grpc::ServerWriter<rpc::PullMessage>* writer) override;
  grpc::Status Push(grpc::ServerContext* context,
                    grpc::ServerReader<rpc::PushMessage>* reader,
                    rpc::PushResponse* response) override;
  // A push and the next pull in one call (rpc::StepMessage).
  grpc::Status Step(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<rpc::PullMessage, rpc::StepMessage>* stream)
      override;
  grpc::Status StepOnce(grpc::ServerContext* context,
                        const rpc::StepMessage* request,
                        rpc::PullMessage* response) override;
  grpc::Status WorkerDone(grpc::ServerContext* context,
                          const rpc::WorkerDoneRequest* request,
                          rpc::WorkerDoneResponse* response) override;
  grpc::Status Shutdown(grpc::ServerContext* context,
                        const rpc::ShutdownRequest* request,
                        rpc::ShutdownResponse* response) override;

  // Applies a sync step whose missing workers have since finished or gone
  // silent. Called periodically by the serving loop.
  void Tick();
  // Waits up to `timeout` for a Shutdown call; true once one came.
  bool WaitForShutdown(std::chrono::milliseconds timeout);
  std::string shutdown_reason() const;
  int64_t global_step() const;

 private:
  struct Shard;
  PsService(const JobFile& job, const PsOptions& options);
  Status Restore(const std::string& path);
  // Takes a worker's gradients: applied (async), added to the step's sum
  // (sync) or dropped as stale; `applied` says which.
  grpc::Status AcceptPush(const rpc::PushMessage::Header& header,
                          std::vector<rpc::TensorPiece> grads, bool* applied,
                          int64_t* global_step);
  // Copies out what `request` asks for, once the global step reached its
  // min_step; sets the header's global step (and slot steps).
  grpc::Status Gather(grpc::ServerContext* context,
                      const rpc::PullRequest& request,
                      std::vector<rpc::TensorPiece>* pieces,
                      rpc::PullHeader* header);
  // The push of `first` (with `grads`, taken out of the call's messages),
  // then its pull into `pieces`.
  grpc::Status RunStep(grpc::ServerContext* context,
                       const rpc::StepMessage& first,
                       std::vector<rpc::TensorPiece> grads,
                       rpc::PullHeader* header,
                       std::vector<rpc::TensorPiece>* pieces);
  // OK when every piece of `grads` names a variable of this PS and holds
  // rows it owns, in sizes that add up (checked arithmetic); nothing is
  // changed. REQUIRES: mu_ held.
  Status CheckGradients(const std::vector<rpc::TensorPiece>& grads);
  // Applies every piece. REQUIRES: mu_ held; CheckGradients(grads) OK (the
  // shards never change, so a check on arrival holds when a sync step is
  // applied later).
  Status ApplyGradients(const std::vector<rpc::TensorPiece>& grads,
                        float scale);
  void ApplyPendingLocked();
  int RequiredLocked() const;
  void SeenLocked(int worker);
  Shard* FindLocked(const std::string& name);

  // The first error of applying an aggregated sync step; every later push
  // is refused with it. REQUIRES: mu_ held.
  Status apply_error_;
  const PsOptions options_;
  const TrainMode mode_;
  const int64_t replicas_to_aggregate_;
  const int64_t max_staleness_;
  const std::chrono::seconds heartbeat_timeout_;
  const Partition partition_;
  kernels::Context ctx_;
  std::unique_ptr<kernels::Optimizer> wide_optimizer_;
  std::unique_ptr<kernels::Optimizer> deep_optimizer_;

  mutable std::mutex mu_;
  std::condition_variable step_cv_;
  std::vector<std::unique_ptr<Shard>> shards_;
  int64_t global_step_ = 0;
  // Sync mode: the gradients of the current step, summed, and who sent them.
  std::vector<std::vector<rpc::TensorPiece>> pending_;
  std::vector<int> pending_workers_;
  std::vector<std::chrono::steady_clock::time_point> last_seen_;
  std::vector<bool> done_;
  bool shutdown_ = false;
  std::string shutdown_reason_;
};

}  // namespace dtf::runtime
