// Collective operations between the ranks of an allreduce run (one process
// a rank), behind one interface with two implementations: NCCL between
// GPUs (nccl.h) and Gloo over TCP between CPU processes (gloo.h). The
// allreduce update (lib/runtime/train/update_allreduce.cc) sees only this
// interface; the device of the run picks the implementation.
//
// Every rank must make the same calls, in the same order, with tensors of
// the same size: a rank that skips a call leaves the others waiting in it —
// for at most CollectiveLimits::timeout (collective_wait.h). No call waits
// for ever: a peer lost (Unavailable), a call past the timeout
// (DeadlineExceeded) or a cancel (Cancelled) aborts the collective and
// fails the call with a Status naming it, this rank ("rank 1 of 4") and,
// where the implementation knows it, the peer; every later call then fails
// at once (FailedPrecondition, naming the first failure).
//
// Thread-safety: one thread at a time per collective.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/kernels/collective_wait.h"
#include "lib/kernels/tensor.h"

namespace dtf::kernels {

class Collective {
 public:
  Collective() = default;
  Collective(const Collective&) = delete;
  Collective& operator=(const Collective&) = delete;
  virtual ~Collective() = default;

  // What carries the collective ("NCCL", "Gloo"), for messages.
  virtual std::string_view backend() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Replaces *t on every rank with the mean of the ranks' *t, in place;
  // returns once it is done. t is in the memory of the collective's device.
  virtual Status AllReduceMean(Tensor* t) = 0;
  // Replaces *host_value on every rank with the smallest of the ranks'
  // values.
  virtual Status AllReduceMin(float* host_value) = 0;
  // Replaces *t on every rank with rank `root`'s *t (same size everywhere).
  virtual Status Broadcast(Tensor* t, int root) = 0;
  // Every rank's `mine`, in rank order (sizes may differ between ranks).
  virtual StatusOr<std::vector<std::string>> AllGather(
      std::string_view mine) = 0;
  // Returns once every rank has called it.
  virtual Status Barrier() = 0;
  // Ends the collective at once: whatever it still runs fails, and so does
  // every later call, on this rank; peers see it as this rank lost.
  virtual void Abort() = 0;
};

}  // namespace dtf::kernels
