// A thread that runs one call at a time for a caller that may stop waiting
// for it. Gloo's TCP transport does not wake a wait for a send to a peer
// whose connection broke while the send was being written (its pair fails
// the pending operations but not the one being written), nor can a caller
// reach the buffers of the wait it is in: such a call ends only by its
// timeout (collective_timeout, minutes). The collective (gloo_collective.cc)
// runs each call here instead and waits for it, asking every `poll` whether
// to go on waiting: once a run is being stopped it gives up on a call still
// under way after the grace, so that the task can write its checkpoint and
// end within the launcher's grace rather than be killed.
//
// Giving up leaves the call running on the thread alone, detached, with
// what the call holds: the caller must make sure that it touches nothing
// of the caller's from then on (the collective closes every connection,
// so that no more data arrives for it). The CallThread then takes no
// more calls.
//
// Thread-safety: Run and the destructor are called from one thread at a
// time.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <thread>

namespace dtf::kernels {

class CallThread {
 public:
  CallThread() = default;
  ~CallThread();
  CallThread(const CallThread&) = delete;
  CallThread& operator=(const CallThread&) = delete;

  // Runs `call` on the thread (started by the first call) and waits for
  // it: true once it returned, an exception it threw rethrown here; false
  // when give_up(), asked every `poll` while the call runs, said so first
  // (the call is abandoned, and every later Run returns false at once).
  bool Run(std::function<void()> call, const std::function<bool()>& give_up,
           std::chrono::milliseconds poll);

  bool abandoned() const { return abandoned_; }

 private:
  struct State;
  static void Loop(std::shared_ptr<State> state);

  std::shared_ptr<State> state_;
  std::thread thread_;
  bool abandoned_ = false;
};

}  // namespace dtf::kernels
