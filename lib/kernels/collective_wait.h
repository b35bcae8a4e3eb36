// Waiting for a collective (or a communicator's set-up or teardown) without
// waiting for ever: NCCL's communicators are non-blocking (nccl.cc), so a
// call returns at once and its completion is polled here — NCCL's
// asynchronous state of the communicator and, for a collective, the stream
// it was queued on. A peer that died or hung shows as an asynchronous error
// or as a wait past the timeout; a run being stopped, as the cancel flag.
// Each ends the wait by aborting the communicator (so that nothing queued
// on the stream waits for the peer any longer) and returning a Status that
// names the call, the rank and the reason.
//
// The polling is apart from NCCL (CommProgress) so that it can be tested
// without a GPU.
#pragma once

#include <atomic>
#include <chrono>
#include <string>
#include <string_view>

#include "lib/base/status.h"

namespace dtf::kernels {

// How long the calls of one communicator may take.
struct CollectiveLimits {
  // A call not done within this is taken as a peer lost.
  std::chrono::milliseconds timeout{std::chrono::seconds(300)};
  // What sets `timeout`, for the message (e.g. "collective_timeout in
  // [train]").
  std::string timeout_name = "the collective timeout";
  // The run is being stopped once this becomes true; may be null. A call
  // still under way `cancel_grace` after it became true is aborted (a
  // healthy collective ends well within it, so every rank can still agree
  // to stop).
  const std::atomic<bool>* cancel = nullptr;
  std::chrono::milliseconds cancel_grace{std::chrono::seconds(2)};
};

// What a wait polls and how it gives up.
class CommProgress {
 public:
  virtual ~CommProgress() = default;
  // The communicator's asynchronous state (ncclCommGetAsyncError): OK with
  // *in_progress false once nothing of the last call is pending, OK with
  // *in_progress true while it is (ncclInProgress), else the error.
  virtual Status AsyncState(bool* in_progress) = 0;
  // Whether everything queued on the communicator's stream has run
  // (cudaStreamQuery); an error of the stream as a Status.
  virtual StatusOr<bool> StreamDone() = 0;
  // Aborts the communicator (ncclCommAbort): whatever it still runs ends.
  virtual void Abort() = 0;
};

enum class WaitUntil {
  // The communicator's own work is done: its set-up, the enqueuing of a
  // call, its teardown.
  kCommunicatorReady,
  // And the stream has run everything queued on it: a collective's result
  // is there.
  kStreamDone,
};

// Polls `comm` until `until` holds; on an asynchronous error, a stream
// error, the timeout or a cancel, aborts it and returns the error:
// `call` and `rank` ("rank 1 of 2") name what waited, and the status is the
// error's own code (Unavailable for a lost peer as nccl.cc translates it),
// DeadlineExceeded for the timeout, Cancelled for a cancel.
Status WaitForComm(CommProgress& comm, WaitUntil until, std::string_view call,
                   std::string_view rank, const CollectiveLimits& limits);

}  // namespace dtf::kernels
