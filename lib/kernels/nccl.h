// The collective (collective.h) between the GPUs of an allreduce run (one
// process, one GPU, one rank each) over NCCL. NCCL is loaded when the
// first communicator is made (dlopen of libnccl.so.2) rather than linked,
// so a dtf built with CUDA still starts on hosts without NCCL; there, and
// in a build without CUDA, every call is ResourceExhausted saying why (the
// machine lacks what the call needs; a failed peer is Unavailable).
//
// A run's ranks agree on one unique id, made by rank 0 (NewNcclId) and
// handed to the others out of band (the chief's Coordinator,
// docs/protocol.md); each then joins with its rank.
//
// The communicator is non-blocking and every call, its set-up included, is
// polled to its end (collective_wait.h): NCCL's asynchronous error
// (Unavailable for a failed peer or network), the timeout or a cancel
// aborts the communicator.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "lib/base/status.h"
#include "lib/kernels/collective.h"
#include "lib/kernels/collective_wait.h"
#include "lib/kernels/context.h"

namespace dtf::kernels {

// A fresh unique id (NCCL's ncclUniqueId, as bytes): rank 0 makes it once
// per run.
StatusOr<std::string> NewNcclId();

// Joins the communicator of `size` ranks that `id` names as `rank`, on
// ctx's device, using ctx's stream; returns once every rank joined (within
// limits.timeout, as each later call). `ctx` must be a CUDA context and
// outlive the collective; so must limits.cancel. A communicator of one
// rank is allowed (every collective is then a copy). Tensors are on ctx's
// device; AllReduceMin's value is on the host. The collective's
// destructor tears the communicator down (ncclCommFinalize, then
// ncclCommDestroy), aborting it where that does not end within 10 s.
StatusOr<std::unique_ptr<Collective>> JoinNccl(const Context& ctx,
                                               std::string_view id, int rank,
                                               int size,
                                               const CollectiveLimits& limits);

}  // namespace dtf::kernels
