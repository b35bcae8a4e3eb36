// Collective operations between the GPUs of an allreduce run (one process,
// one GPU, one rank each) over NCCL. NCCL is loaded when the first
// communicator is made (dlopen of libnccl.so.2) rather than linked, so a dtf
// built with CUDA still starts on hosts without NCCL; there, and in a build
// without CUDA, every call is ResourceExhausted saying why (the machine
// lacks what the call needs; a failed peer is Unavailable).
//
// A run's ranks agree on one unique id, made by rank 0 (NewId) and handed to
// the others out of band (the chief's Coordinator, docs/protocol.md); each
// then joins with its rank. Every rank must make the same calls, in the same
// order, with tensors of the same size: a rank that skips a call leaves the
// others waiting in it — for at most the communicator's timeout.
//
// No call waits for ever: the communicator is non-blocking and every call,
// its set-up included, is polled to its end (collective_wait.h). A peer
// lost (NCCL's asynchronous error, Unavailable for a failed peer or
// network), a call past CollectiveLimits::timeout (DeadlineExceeded) or a
// cancel (Cancelled) aborts the communicator and fails the call with a
// Status naming it, this rank and the reason; every later call then fails
// at once (FailedPrecondition, naming the first failure).
//
// Thread-safety: one thread at a time per communicator, as for its Context.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "lib/base/status.h"
#include "lib/kernels/collective_wait.h"
#include "lib/kernels/context.h"
#include "lib/kernels/tensor.h"

namespace dtf::kernels {

class Communicator {
 public:
  // A fresh unique id (NCCL's ncclUniqueId, as bytes): rank 0 makes it once
  // per run.
  static StatusOr<std::string> NewId();
  // Joins the communicator of `size` ranks that `id` names as `rank`, on
  // ctx's device, using ctx's stream; returns once every rank joined
  // (within limits.timeout, as each later call). `ctx` must be a CUDA
  // context and outlive the communicator; so must limits.cancel. A
  // communicator of one rank is allowed (every collective is then a copy).
  static StatusOr<std::unique_ptr<Communicator>> Join(
      const Context& ctx, std::string_view id, int rank, int size,
      const CollectiveLimits& limits);

  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  // Tears the communicator down (ncclCommFinalize, then ncclCommDestroy),
  // aborting it where that does not end within the timeout.
  ~Communicator();

  // Replaces *t on every rank with the mean of the ranks' *t, in place, on
  // the context's stream; returns once it is done. t is on the context's
  // device.
  Status AllReduceMean(Tensor* t);
  // Replaces *host_value on every rank with the smallest of the ranks'
  // values; returns once it is known (waits for the context's stream).
  Status AllReduceMin(float* host_value);
  // Replaces *t on every rank with rank `root`'s *t (same size everywhere),
  // on the context's stream; returns once it is done.
  Status Broadcast(Tensor* t, int root);

  int rank() const;
  int size() const;

  // Private state, defined where NCCL is (lib/kernels/cuda/nccl.cc).
  struct Impl;

 private:
  explicit Communicator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dtf::kernels
