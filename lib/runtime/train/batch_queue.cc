#include "lib/runtime/train/batch_queue.h"

#include <utility>

#include "lib/runtime/model/device.h"

namespace dtf::runtime {

BatchQueue::BatchQueue(const kernels::Context& ctx,
                       std::function<void(PreparedBatch*)> prepare,
                       bool prefetch)
    : prepare_(std::move(prepare)), prefetch_(prefetch) {
  for (PreparedBatch& slot : slots_) PinInputs(ctx, &slot.inputs);
  if (prefetch_) thread_ = std::thread([this] { Loop(); });
}

BatchQueue::~BatchQueue() {
  if (!prefetch_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

StatusOr<PreparedBatch*> BatchQueue::First() {
  if (prefetch_) {
    Start(cur_);
    Wait();
  } else {
    prepare_(cur_);
  }
  DTF_RETURN_IF_ERROR(cur_->status);
  if (prefetch_ && cur_->more) Start(next_);
  return cur_;
}

StatusOr<PreparedBatch*> BatchQueue::Next() {
  if (prefetch_) {
    Wait();
  } else if (!next_ready_) {
    prepare_(next_);
  }
  next_ready_ = true;
  DTF_RETURN_IF_ERROR(next_->status);
  return next_;
}

PreparedBatch* BatchQueue::Advance() {
  std::swap(cur_, next_);
  next_ready_ = false;
  if (prefetch_ && cur_->more) Start(next_);
  return cur_;
}

void BatchQueue::Start(PreparedBatch* out) {
  std::lock_guard<std::mutex> lock(mu_);
  job_ = out;
  cv_.notify_all();
}

void BatchQueue::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return job_ == nullptr; });
}

void BatchQueue::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || job_ != nullptr; });
    if (stop_) return;
    lock.unlock();
    prepare_(job_);
    lock.lock();
    job_ = nullptr;
    cv_.notify_all();
  }
}

}  // namespace dtf::runtime
