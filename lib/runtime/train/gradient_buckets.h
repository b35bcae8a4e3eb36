// The gradient buckets of an allreduce run and the communication thread
// that averages them while the backward pass goes on (update_allreduce.cc).
//
// Backward finishes the variables last to first (the logits layer, then the
// hidden layers from the top, the embeddings, the wide part), so the
// buckets hold the trainable variables in that order: the first bucket
// fills first, and its collective runs while backward computes the rest,
// as PyTorch DDP's reducer does. Every rank plans the same buckets from
// the same variables and reduces them in the same order, so the averages
// are bit-identical on every rank.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "lib/base/status.h"
#include "lib/kernels/collective.h"
#include "lib/kernels/tensor.h"
#include "lib/runtime/model/model.h"

namespace dtf::runtime {

// Gradients averaged in one collective: variable vars[k] at offsets[k]
// (floats), size floats in all.
struct GradientBucket {
  std::vector<size_t> vars;
  std::vector<int64_t> offsets;
  int64_t size = 0;
};

// The most the first bucket and every later one hold (PyTorch DDP's
// defaults: a small first bucket starts the first collective early, 25 MB
// after it run at full bandwidth with little extra memory).
constexpr int64_t kFirstBucketBytes = int64_t{1} << 20;
constexpr int64_t kBucketBytes = int64_t{25} << 20;

// The trainable variables of `vars` in reverse order (the order in which
// backprop finishes them) in buckets of at most first_bytes (the first) and
// bytes (the others); a variable larger than that gets a bucket to itself.
std::vector<GradientBucket> PlanGradientBuckets(
    const std::vector<Variable>& vars, int64_t first_bytes = kFirstBucketBytes,
    int64_t bytes = kBucketBytes);

// Averages buckets over a collective on a thread of its own, one after the
// other in the order they were started: the same order on every rank.
//
// Thread-safety: Start, Finish and the destructor are called from one
// thread (the training loop's); the collective is used by the reducer's
// thread from the first Start of a step until Finish returns, and by no
// other thread meanwhile.
class BucketReducer {
 public:
  // After each bucket is averaged, `go_on(index, bucket)` (on the reducer's
  // thread) says whether the step's later buckets are averaged too (false:
  // they are skipped, as when the vote the first bucket carries ends the
  // step on every rank). `comm` outlives the reducer.
  using GoOn = std::function<bool(size_t index, const kernels::Tensor&)>;
  BucketReducer(kernels::Collective* comm, GoOn go_on);
  ~BucketReducer();
  BucketReducer(const BucketReducer&) = delete;
  BucketReducer& operator=(const BucketReducer&) = delete;

  // Queues *bucket (host memory, alive and untouched until Finish) for its
  // average in place; `index` is its place in the step (0, 1, 2, ...).
  void Start(size_t index, kernels::Tensor* bucket);
  // Waits until every bucket started since the last Finish is averaged or
  // skipped; returns the first collective's error (the buckets after it
  // are skipped).
  Status Finish();

 private:
  void Loop();

  kernels::Collective* const comm_;
  const GoOn go_on_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<size_t, kernels::Tensor*>> queue_;
  size_t started_ = 0;
  size_t done_ = 0;
  bool skip_ = false;
  bool shutdown_ = false;
  Status status_;
  std::thread thread_;
};

}  // namespace dtf::runtime
