#include "lib/runtime/ps/fanout.h"

namespace dtf::runtime {

Fanout::Fanout(int n) : n_(n) {
  for (int i = 1; i < n_; ++i) threads_.emplace_back([this, i] { Loop(i); });
}

Fanout::~Fanout() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void Fanout::Run(const std::function<void(int)>& fn) {
  if (n_ <= 0) return;
  if (n_ > 1) {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    pending_ = n_ - 1;
    ++generation_;
  }
  start_cv_.notify_all();
  fn(0);
  if (n_ > 1) {
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [&] { return pending_ == 0; });
    fn_ = nullptr;
  }
}

void Fanout::Loop(int index) {
  int64_t seen = 0;
  while (true) {
    const std::function<void(int)>* fn;
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      fn = fn_;
    }
    (*fn)(index);
    std::lock_guard<std::mutex> lock(mu_);
    if (--pending_ == 0) done_cv_.notify_one();
  }
}

}  // namespace dtf::runtime
