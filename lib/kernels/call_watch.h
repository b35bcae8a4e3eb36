// Gives up a collective's call still under way once the run has been
// stopping for the cancel grace (CollectiveLimits::cancel_grace), so that a
// rank whose peer died or hung writes its checkpoint and ends within the
// launcher's grace instead of waiting out collective_timeout (minutes).
// The call runs on the caller's thread as ever; the watch is a thread of
// its own that looks at the run's cancel every 50 ms and, past the grace,
// calls the call's `give_up` (which makes it fail: Gloo's pairs failed and
// its buffers' waits interrupted, gloo_collective.cc; the TLS ring's
// streams shut down, tls_ring.cc), again every 5 ms until the call
// returns, since one interruption may end only one of its waits. The
// watch also keeps the moment the run began stopping for the collective,
// so that a call that begins past the grace can fail at once (GraceLeft).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace dtf::kernels {

class CallWatch {
 public:
  // `cancel` (not null) outlives the watch.
  CallWatch(const std::atomic<bool>* cancel, std::chrono::milliseconds grace);
  ~CallWatch();
  CallWatch(const CallWatch&) = delete;
  CallWatch& operator=(const CallWatch&) = delete;

  // The call under way while a Scope lives (one at a time). `give_up` is
  // called on the watch's thread, never after the Scope ends, so it may
  // use what the call holds. A null `watch` watches nothing (a collective
  // whose run cannot be stopped).
  class Scope {
   public:
    Scope(CallWatch* watch, std::function<void()> give_up);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    CallWatch* const watch_;
  };

  // nullopt while the run goes on; once it is being stopped, what is left
  // of the grace (zero or less: past it), counted from when the watch
  // first saw the stop.
  std::optional<std::chrono::milliseconds> GraceLeft();
  // Whether the last call watched was given up.
  bool gave_up() const;
  // Why a call given up failed ("the run is being stopped and the call
  // was still under way 2000 ms after (a peer died or hung)").
  std::string GaveUpWhy() const;

 private:
  void Loop();
  // Notes when the run began stopping, the first time it is seen.
  void SeeCancelLocked(std::chrono::steady_clock::time_point now);

  const std::atomic<bool>* const cancel_;
  const std::chrono::milliseconds grace_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> give_up_;  // of the call under way; empty: none
  bool gave_up_ = false;
  bool cancel_seen_ = false;
  std::chrono::steady_clock::time_point cancelled_at_;
  bool quit_ = false;
  std::thread thread_;
};

}  // namespace dtf::kernels
