#include "lib/data/parse_threads.h"

namespace dtf {

ParseThreads::ParseThreads(int n) {
  for (int i = 1; i < n; ++i) threads_.emplace_back([this, i] { Loop(i); });
}

ParseThreads::~ParseThreads() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void ParseThreads::Run(const std::function<void(int)>& fn) {
  if (threads_.empty()) {
    fn(0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    running_ = static_cast<int>(threads_.size());
    ++generation_;
  }
  cv_.notify_all();
  fn(0);
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return running_ == 0; });
  job_ = nullptr;
}

void ParseThreads::Loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    (*job)(index);
    std::lock_guard<std::mutex> lock(mu_);
    if (--running_ == 0) cv_.notify_all();
  }
}

}  // namespace dtf
