// The gradient buckets of an allreduce run and the communication thread
// that averages them: ranks as threads over Gloo on loopback.
#include "lib/runtime/train/gradient_buckets.h"

#include <chrono>
#include <cstring>
#include <latch>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "lib/kernels/gloo.h"

namespace dtf::runtime {
namespace {

using namespace std::chrono_literals;

Variable Var(std::string name, int64_t floats, bool trainable = true) {
  Variable v;
  v.name = std::move(name);
  v.trainable = trainable;
  v.value = kernels::Tensor::Empty({floats});
  return v;
}

TEST(PlanGradientBuckets, LastVariablesFirstSmallFirstBucketLargeAlone) {
  std::vector<Variable> vars;
  vars.push_back(Var("a", 100));             // 0
  vars.push_back(Var("b", 300));             // 1
  vars.push_back(Var("moving", 50, false));  // 2: no gradient
  vars.push_back(Var("c", 1000));            // 3: larger than any bucket
  vars.push_back(Var("d", 20));              // 4
  vars.push_back(Var("e", 10));              // 5
  // First bucket 128 bytes (32 floats), the others 1,600 (400 floats).
  std::vector<GradientBucket> b = PlanGradientBuckets(vars, 128, 1600);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].vars, (std::vector<size_t>{5, 4}));
  EXPECT_EQ(b[0].offsets, (std::vector<int64_t>{0, 10}));
  EXPECT_EQ(b[0].size, 30);
  EXPECT_EQ(b[1].vars, (std::vector<size_t>{3}));
  EXPECT_EQ(b[1].size, 1000);
  EXPECT_EQ(b[2].vars, (std::vector<size_t>{1, 0}));
  EXPECT_EQ(b[2].offsets, (std::vector<int64_t>{0, 300}));
  EXPECT_EQ(b[2].size, 400);
}

TEST(PlanGradientBuckets, DefaultsPutASmallModelInOneBucket) {
  std::vector<Variable> vars;
  for (int i = 0; i < 6; ++i) vars.push_back(Var("v", 1000));
  EXPECT_EQ(PlanGradientBuckets(vars).size(), 1u);
}

// Runs body(rank, collective) on `size` ranks, each a thread joined to one
// Gloo collective on loopback. No body starts before every rank has
// joined: a rank that aborts at once must not fail a peer's join.
template <typename Body>
void OnRanks(int size, Body body) {
  kernels::MemoryStore store;
  kernels::CollectiveLimits limits;
  limits.timeout = 20s;
  std::latch joined(size);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      StatusOr<std::unique_ptr<kernels::Collective>> c = kernels::JoinGloo(
          store, "buckets/", "127.0.0.1", r, size, limits, 20s);
      joined.arrive_and_wait();
      ASSERT_TRUE(c.ok()) << c.status();
      body(r, **c);
    });
  }
  for (std::thread& t : threads) t.join();
}

// A value no two ranks, buckets or elements share, with a fraction that
// makes the order of the sum matter to float rounding.
float Value(int rank, size_t bucket, int64_t i) {
  return 0.1f * float(rank + 1) + 1.37f * float(bucket) +
         1e-3f * float(i % 97) / 3.0f;
}

// Buckets started one by one while the "backward pass" goes on, at other
// moments on every rank: every rank ends with the same bits, and the same
// bits as the collective called bucket after bucket on the loop's thread.
TEST(BucketReducer, AveragesAreBitIdenticalAcrossRanksAndToInlineCalls) {
  constexpr int kRanks = 3;
  const std::vector<int64_t> sizes = {7, 1000, 33, 4096};
  std::vector<std::vector<kernels::Tensor>> overlapped(kRanks);
  std::vector<std::vector<kernels::Tensor>> inline_(kRanks);
  OnRanks(kRanks, [&](int rank, kernels::Collective& comm) {
    auto fill = [&](std::vector<kernels::Tensor>* out) {
      for (size_t b = 0; b < sizes.size(); ++b) {
        kernels::Tensor t = kernels::Tensor::Empty({sizes[b]});
        for (int64_t i = 0; i < sizes[b]; ++i) t.data()[i] = Value(rank, b, i);
        out->push_back(std::move(t));
      }
    };
    fill(&overlapped[size_t(rank)]);
    fill(&inline_[size_t(rank)]);
    {
      BucketReducer reducer(&comm, nullptr);
      for (int step = 0; step < 2; ++step) {
        for (size_t b = 0; b < sizes.size(); ++b) {
          // Each rank reaches the next bucket at another moment.
          std::this_thread::sleep_for(
              std::chrono::milliseconds((rank * 3 + int(b) * 5 + step) % 7));
          reducer.Start(b, &overlapped[size_t(rank)][b]);
        }
        ASSERT_TRUE(reducer.Finish().ok());
      }
    }
    for (int step = 0; step < 2; ++step) {
      for (kernels::Tensor& t : inline_[size_t(rank)]) {
        ASSERT_TRUE(comm.AllReduceMean(&t).ok());
      }
    }
  });
  for (size_t b = 0; b < sizes.size(); ++b) {
    const size_t bytes = size_t(sizes[b]) * sizeof(float);
    for (int r = 0; r < kRanks; ++r) {
      EXPECT_EQ(std::memcmp(overlapped[size_t(r)][b].data(),
                            overlapped[0][b].data(), bytes),
                0)
          << "bucket " << b << " of rank " << r << " differs from rank 0's";
      EXPECT_EQ(std::memcmp(overlapped[size_t(r)][b].data(),
                            inline_[size_t(r)][b].data(), bytes),
                0)
          << "bucket " << b << " of rank " << r
          << " differs from the inline collective's";
    }
    // Two averages of the same values leave the first average.
    float mean = 0;
    for (int r = 0; r < kRanks; ++r) mean += Value(r, b, 5);
    EXPECT_NEAR(overlapped[0][b].data()[5], mean / kRanks, 1e-5);
  }
}

// go_on says stop after the first bucket (the vote ended the step): every
// rank skips the later buckets, which stay as they were, and the next step
// averages all of them again.
TEST(BucketReducer, AStopAfterTheFirstBucketSkipsTheRest) {
  constexpr int kRanks = 2;
  std::vector<float> second_after(kRanks), third_after(kRanks);
  OnRanks(kRanks, [&](int rank, kernels::Collective& comm) {
    int calls = 0;
    BucketReducer reducer(&comm, [&](size_t index, const kernels::Tensor&) {
      ++calls;
      return !(index == 0 && calls == 1);
    });
    std::vector<kernels::Tensor> t;
    for (int b = 0; b < 3; ++b) {
      t.push_back(kernels::Tensor::FromValues({1}, {float(rank + 10 * b)}));
    }
    for (size_t b = 0; b < t.size(); ++b) reducer.Start(b, &t[b]);
    ASSERT_TRUE(reducer.Finish().ok());
    EXPECT_EQ(t[0][0], 0.5f);  // (0 + 1) / 2
    EXPECT_EQ(t[1][0], float(rank + 10));
    EXPECT_EQ(t[2][0], float(rank + 20));
    for (size_t b = 0; b < t.size(); ++b) reducer.Start(b, &t[b]);
    ASSERT_TRUE(reducer.Finish().ok());
    second_after[size_t(rank)] = t[1][0];
    third_after[size_t(rank)] = t[2][0];
  });
  EXPECT_EQ(second_after[0], 10.5f);
  EXPECT_EQ(second_after[1], 10.5f);
  EXPECT_EQ(third_after[0], 20.5f);
}

// A collective that fails (the peer is gone): Finish returns its error
// and the buckets after it are skipped; nothing hangs.
TEST(BucketReducer, AFailedCollectiveFailsFinish) {
  OnRanks(2, [&](int rank, kernels::Collective& comm) {
    if (rank == 1) {
      comm.Abort();
      return;
    }
    BucketReducer reducer(&comm, nullptr);
    kernels::Tensor a = kernels::Tensor::FromValues({1}, {1.0f});
    kernels::Tensor b = kernels::Tensor::FromValues({1}, {2.0f});
    reducer.Start(0, &a);
    reducer.Start(1, &b);
    const auto start = std::chrono::steady_clock::now();
    Status st = reducer.Finish();
    EXPECT_FALSE(st.ok());
    EXPECT_LT(std::chrono::steady_clock::now() - start, 25s);
    EXPECT_EQ(b[0], 2.0f);
  });
}

}  // namespace
}  // namespace dtf::runtime
