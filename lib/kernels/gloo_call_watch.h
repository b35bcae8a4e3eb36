// Gives up a Gloo call (gloo_collective.cc) still under way once the run
// has been stopping for the cancel grace, so that a rank whose peer died or
// hung writes its checkpoint and ends within the launcher's grace instead
// of waiting out collective_timeout (minutes).
//
// Gloo offers no way to cancel a call. Its own way out of one is a wait's
// timeout, which fails every pair of the context and with it each
// operation pending on a pair: the watch does the same on demand, with a
// wait of 1 ms on a buffer nothing is sent to. Gloo's TCP pair does not
// fail a send it was writing when its connection broke (a peer killed
// mid-transfer), so the watch also interrupts the waits on the call's own
// buffers (abortWaitSend, abortWaitRecv) until the call returns; the call
// then fails at its next send or receive on a failed pair, or ends with
// whatever it has, and the collective reports it as given up either way.
//
// The call runs on the caller's thread as before: the watch is a thread of
// its own that looks at the run's cancel every 50 ms.
#pragma once

#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace dtf::kernels {

class GlooCallWatch {
 public:
  // `cancel` (not null) outlives the watch.
  GlooCallWatch(std::shared_ptr<gloo::Context> context,
                const std::atomic<bool>* cancel,
                std::chrono::milliseconds grace);
  ~GlooCallWatch();
  GlooCallWatch(const GlooCallWatch&) = delete;
  GlooCallWatch& operator=(const GlooCallWatch&) = delete;

  // The call under way while a Scope lives, with the buffers it waits on
  // (which outlive the Scope). One call at a time.
  class Scope {
   public:
    Scope(GlooCallWatch& watch,
          std::vector<gloo::transport::UnboundBuffer*> buffers);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    GlooCallWatch& watch_;
  };

  // Whether the last call watched was given up.
  bool gave_up() const;

 private:
  void Loop();
  // Fails every pair of the context, as a wait's timeout does.
  void FailEveryPair();

  const std::shared_ptr<gloo::Context> context_;
  const std::atomic<bool>* const cancel_;
  const std::chrono::milliseconds grace_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool in_call_ = false;
  std::vector<gloo::transport::UnboundBuffer*> buffers_;
  bool gave_up_ = false;
  bool failed_pairs_ = false;
  bool cancel_seen_ = false;
  std::chrono::steady_clock::time_point cancelled_at_;
  bool quit_ = false;
  std::thread thread_;
};

}  // namespace dtf::kernels
