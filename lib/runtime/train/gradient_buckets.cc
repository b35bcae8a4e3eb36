#include "lib/runtime/train/gradient_buckets.h"

#include <utility>

namespace dtf::runtime {

std::vector<GradientBucket> PlanGradientBuckets(
    const std::vector<Variable>& vars, int64_t first_bytes, int64_t bytes) {
  const auto floats = [](int64_t b) { return b / int64_t(sizeof(float)); };
  std::vector<GradientBucket> buckets;
  for (size_t v = vars.size(); v-- > 0;) {
    if (!vars[v].trainable) continue;
    const int64_t n = vars[v].value.size();
    const int64_t limit = floats(buckets.size() <= 1 ? first_bytes : bytes);
    if (buckets.empty() ||
        (buckets.back().size > 0 && buckets.back().size + n > limit)) {
      buckets.emplace_back();
    }
    GradientBucket& b = buckets.back();
    b.vars.push_back(v);
    b.offsets.push_back(b.size);
    b.size += n;
  }
  return buckets;
}

BucketReducer::BucketReducer(kernels::Collective* comm, GoOn go_on)
    : comm_(comm), go_on_(std::move(go_on)) {}

BucketReducer::~BucketReducer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void BucketReducer::Start(size_t index, kernels::Tensor* bucket) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.emplace_back(index, bucket);
    ++started_;
    if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
  }
  cv_.notify_all();
}

Status BucketReducer::Finish() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_ == started_; });
  Status st = std::move(status_);
  status_ = OkStatus();
  skip_ = false;
  started_ = done_ = 0;
  return st;
}

void BucketReducer::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return shutdown_ || !queue_.empty(); });
    if (queue_.empty()) return;  // shut down, nothing left
    const auto [index, bucket] = queue_.front();
    queue_.pop_front();
    if (!skip_) {
      lock.unlock();
      Status st = comm_->AllReduceMean(bucket);
      const bool go_on = st.ok() && (!go_on_ || go_on_(index, *bucket));
      lock.lock();
      if (!st.ok() && status_.ok()) status_ = std::move(st);
      if (!go_on) skip_ = true;
    }
    ++done_;
    cv_.notify_all();
  }
}

}  // namespace dtf::runtime
