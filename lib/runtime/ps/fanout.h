// Runs one function for each of n indices at once: index 0 on the calling
// thread, the others on threads kept for the object's lifetime (one per
// index), so a call per training step costs no thread start. Used to talk to
// every parameter server in parallel.
// Not thread-safe: one Run at a time.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace dtf::runtime {

class Fanout {
 public:
  explicit Fanout(int n);
  ~Fanout();
  Fanout(const Fanout&) = delete;
  Fanout& operator=(const Fanout&) = delete;

  // Calls fn(i) for every i in [0, n) and returns when all have returned.
  void Run(const std::function<void(int)>& fn);

 private:
  void Loop(int index);

  const int n_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(int)>* fn_ = nullptr;
  int64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace dtf::runtime
