#include "lib/kernels/call_watch.h"

#include <utility>

#include "lib/base/strings.h"

namespace dtf::kernels {
namespace {

// How often the watch looks at the run's cancel, and, once it gave up on a
// call, at whether the call has returned.
constexpr std::chrono::milliseconds kLook{50};
constexpr std::chrono::milliseconds kLookWhileGivingUp{5};

}  // namespace

CallWatch::CallWatch(const std::atomic<bool>* cancel,
                     std::chrono::milliseconds grace)
    : cancel_(cancel), grace_(grace) {
  thread_ = std::thread([this] { Loop(); });
}

CallWatch::~CallWatch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

CallWatch::Scope::Scope(CallWatch* watch, std::function<void()> give_up)
    : watch_(watch) {
  if (watch_ == nullptr) return;
  std::lock_guard<std::mutex> lock(watch_->mu_);
  watch_->give_up_ = std::move(give_up);
  watch_->gave_up_ = false;
}

CallWatch::Scope::~Scope() {
  if (watch_ == nullptr) return;
  std::lock_guard<std::mutex> lock(watch_->mu_);
  watch_->give_up_ = nullptr;
}

void CallWatch::SeeCancelLocked(std::chrono::steady_clock::time_point now) {
  if (cancel_seen_) return;
  cancel_seen_ = true;
  cancelled_at_ = now;
}

std::optional<std::chrono::milliseconds> CallWatch::GraceLeft() {
  if (!cancel_->load()) return std::nullopt;
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  SeeCancelLocked(now);
  return std::chrono::duration_cast<std::chrono::milliseconds>(cancelled_at_ +
                                                               grace_ - now);
}

bool CallWatch::gave_up() const {
  std::lock_guard<std::mutex> lock(mu_);
  return gave_up_;
}

std::string CallWatch::GaveUpWhy() const {
  return StrCat("the run is being stopped and the call was still under way ",
                grace_.count(), " ms after (a peer died or hung)");
}

void CallWatch::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!quit_) {
    cv_.wait_for(lock, gave_up_ && give_up_ ? kLookWhileGivingUp : kLook);
    if (quit_ || !cancel_->load()) continue;
    const auto now = std::chrono::steady_clock::now();
    SeeCancelLocked(now);
    if (!give_up_ || now - cancelled_at_ < grace_) continue;
    gave_up_ = true;
    // Under the lock: the Scope, and what the call holds, outlive it.
    give_up_();
  }
}

}  // namespace dtf::kernels
