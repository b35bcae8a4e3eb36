// The collective (lib/kernels/collective.h) of a CPU allreduce run whose
// ranks are on more than one host: a ring over the run's mutual TLS
// (lib/rpc/tls_stream.h), where Gloo's TCP transport would carry the
// gradients in cleartext (docs/protocol.md, "Allreduce transport").
//
// Rank r listens on its task's host, publishes host:port in the store under
// `prefix`<r>, then connects to rank r+1 (whose certificate must name
// "worker-<r+1>") and accepts rank r-1 ("worker-<r-1>"); any other
// connection is dropped at its handshake, and the listener closes once the
// ring is made. AllReduceMean is a ring reduce-scatter then allgather of
// the sum, scaled by 1/size: every element's sum is made on one rank and
// copied to the others, so all ranks hold the same bits. Broadcast passes
// the tensor along the ring; AllGather and Barrier pass every rank's bytes
// around it.
//
// Every read and write is bounded by CollectiveLimits::timeout; a peer lost
// fails the call (Unavailable naming the rank), and every later call fails
// at once (FailedPrecondition naming the first failure), as Gloo's. Once
// the run has been stopping for CollectiveLimits::cancel_grace, a call
// that begins fails at once and one still under way is given up
// (lib/kernels/call_watch.h: both connections end; Cancelled).
#pragma once

#include <chrono>
#include <memory>
#include <string_view>

#include "lib/base/status.h"
#include "lib/kernels/collective.h"
#include "lib/kernels/gloo.h"
#include "lib/rpc/credentials.h"

namespace dtf::runtime {

// Joins the ring of `size` ranks as `rank`, listening on `host`, with the
// run's certificates `tls` (which must be on). Returns once both of this
// rank's neighbours are connected, within `join_timeout`.
StatusOr<std::unique_ptr<kernels::Collective>> JoinTlsRing(
    kernels::KeyValueStore& store, std::string_view prefix,
    std::string_view host, int rank, int size, const rpc::TlsMaterial& tls,
    const kernels::CollectiveLimits& limits,
    std::chrono::milliseconds join_timeout);

}  // namespace dtf::runtime
