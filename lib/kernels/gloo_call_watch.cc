#include "lib/kernels/gloo_call_watch.h"

#include <exception>
#include <utility>

namespace dtf::kernels {
namespace {

// How often the watch looks at the run's cancel, and, once it gave up on a
// call, at whether the call has returned.
constexpr std::chrono::milliseconds kLook{50};
constexpr std::chrono::milliseconds kLookWhileGivingUp{5};

}  // namespace

GlooCallWatch::GlooCallWatch(std::shared_ptr<gloo::Context> context,
                             const std::atomic<bool>* cancel,
                             std::chrono::milliseconds grace)
    : context_(std::move(context)), cancel_(cancel), grace_(grace) {
  thread_ = std::thread([this] { Loop(); });
}

GlooCallWatch::~GlooCallWatch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

GlooCallWatch::Scope::Scope(
    GlooCallWatch& watch, std::vector<gloo::transport::UnboundBuffer*> buffers)
    : watch_(watch) {
  std::lock_guard<std::mutex> lock(watch_.mu_);
  watch_.in_call_ = true;
  watch_.buffers_ = std::move(buffers);
  watch_.gave_up_ = false;
}

GlooCallWatch::Scope::~Scope() {
  std::lock_guard<std::mutex> lock(watch_.mu_);
  watch_.in_call_ = false;
  watch_.buffers_.clear();
}

bool GlooCallWatch::gave_up() const {
  std::lock_guard<std::mutex> lock(mu_);
  return gave_up_;
}

void GlooCallWatch::FailEveryPair() {
  try {
    std::unique_ptr<gloo::transport::UnboundBuffer> probe =
        context_->createUnboundBuffer(nullptr, 0);
    probe->waitRecv(nullptr, std::chrono::milliseconds(1));
  } catch (const std::exception&) {
    // The timeout's exception: every pair has failed.
  }
}

void GlooCallWatch::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!quit_) {
    cv_.wait_for(lock, gave_up_ && in_call_ ? kLookWhileGivingUp : kLook);
    if (quit_ || !cancel_->load()) continue;
    const auto now = std::chrono::steady_clock::now();
    if (!cancel_seen_) {
      cancel_seen_ = true;
      cancelled_at_ = now;
    }
    if (!in_call_ || now - cancelled_at_ < grace_) continue;
    gave_up_ = true;
    if (!failed_pairs_) {
      failed_pairs_ = true;
      lock.unlock();
      FailEveryPair();
      lock.lock();
    }
    // Each abort ends one wait: repeated until the call returns.
    for (gloo::transport::UnboundBuffer* b : buffers_) {
      b->abortWaitSend();
      b->abortWaitRecv();
    }
  }
}

}  // namespace dtf::kernels
