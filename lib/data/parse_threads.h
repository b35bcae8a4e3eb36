// A few threads that run one job on all of them at once, for the input
// pipeline's parsing (lib/data/record_stream.h). Internal to lib/data.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace dtf {

// Run() is called from one thread at a time.
class ParseThreads {
 public:
  // `n` (>= 1) workers in all: the caller of Run() and n - 1 threads.
  explicit ParseThreads(int n);
  // Joins the threads.
  ~ParseThreads();
  ParseThreads(const ParseThreads&) = delete;
  ParseThreads& operator=(const ParseThreads&) = delete;

  int size() const { return static_cast<int>(threads_.size()) + 1; }
  // Runs fn(0), ..., fn(size() - 1) at once, fn(0) on the calling thread,
  // and returns when all have returned.
  void Run(const std::function<void(int)>& fn);

 private:
  void Loop(int index);

  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  const std::function<void(int)>* job_ = nullptr;
  uint64_t generation_ = 0;
  int running_ = 0;
  bool stop_ = false;
};

}  // namespace dtf
