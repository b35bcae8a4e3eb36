#include "lib/kernels/call_thread.h"

#include <condition_variable>
#include <exception>
#include <mutex>
#include <utility>

namespace dtf::kernels {

// What the caller and the thread share; the thread holds it too, so that
// it outlives an abandoned CallThread.
struct CallThread::State {
  std::mutex mu;
  std::condition_variable cv;
  std::function<void()> call;
  bool has_call = false;
  bool done = false;
  // The thread ends: the CallThread is destroyed, or it abandoned the
  // call under way.
  bool quit = false;
  std::exception_ptr error;
};

CallThread::~CallThread() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->quit = true;
  }
  state_->cv.notify_all();
  thread_.join();
}

void CallThread::Loop(std::shared_ptr<State> state) {
  std::unique_lock<std::mutex> lock(state->mu);
  while (true) {
    state->cv.wait(lock, [&] { return state->quit || state->has_call; });
    if (!state->has_call) return;
    std::function<void()> call = std::move(state->call);
    state->has_call = false;
    lock.unlock();
    std::exception_ptr error;
    try {
      call();
    } catch (...) {
      error = std::current_exception();
    }
    call = nullptr;
    lock.lock();
    state->error = std::move(error);
    state->done = true;
    state->cv.notify_all();
    if (state->quit) return;  // abandoned: nobody waits any more
  }
}

bool CallThread::Run(std::function<void()> call,
                     const std::function<bool()>& give_up,
                     std::chrono::milliseconds poll) {
  if (abandoned_) return false;
  if (state_ == nullptr) {
    state_ = std::make_shared<State>();
    thread_ = std::thread(&CallThread::Loop, state_);
  }
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->call = std::move(call);
  state_->has_call = true;
  state_->done = false;
  state_->error = nullptr;
  state_->cv.notify_all();
  while (!state_->cv.wait_for(lock, poll, [&] { return state_->done; })) {
    lock.unlock();
    const bool stop = give_up();
    lock.lock();
    if (stop && !state_->done) {
      state_->quit = true;
      abandoned_ = true;
      lock.unlock();
      thread_.detach();
      return false;
    }
  }
  std::exception_ptr error = std::exchange(state_->error, nullptr);
  lock.unlock();
  if (error != nullptr) std::rethrow_exception(error);
  return true;
}

}  // namespace dtf::kernels
