// The Gloo collective (gloo.h) between ranks that are threads of this
// process, over loopback TCP: the values of every call with 2 and 4 ranks,
// and a rank that never calls, or dies, ending the others' calls by the
// timeout rather than waiting for ever.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/kernels/gloo.h"

namespace dtf::kernels {
namespace {

using ::testing::AnyOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

CollectiveLimits Limits(std::chrono::milliseconds timeout) {
  CollectiveLimits limits;
  limits.timeout = timeout;
  limits.timeout_name = "the test's timeout";
  return limits;
}

// Runs body(rank, collective) on `size` threads, each joined as its rank
// through one MemoryStore; returns each rank's status.
std::vector<Status> RunRanks(
    int size, CollectiveLimits limits,
    const std::function<Status(int, Collective&)>& body) {
  MemoryStore store;
  std::vector<Status> out(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      StatusOr<std::unique_ptr<Collective>> c =
          JoinGloo(store, "test/", "127.0.0.1", r, size, limits, 30s);
      if (!c.ok()) {
        out[size_t(r)] = c.status();
        return;
      }
      out[size_t(r)] = body(r, **c);
    });
  }
  for (std::thread& t : threads) t.join();
  return out;
}

class GlooCollectiveTest : public ::testing::TestWithParam<int> {};

TEST_P(GlooCollectiveTest, EveryCallGivesTheRightValues) {
  const int n = GetParam();
  const std::vector<Status> done =
      RunRanks(n, Limits(30s), [n](int r, Collective& c) -> Status {
        if (c.rank() != r || c.size() != n) {
          return InternalError(StrCat("rank ", c.rank(), " of ", c.size()));
        }
        if (c.backend() != "Gloo") return InternalError("backend");
        // Mean of rank-dependent values, over more than one ring segment.
        const int64_t len = 300000;
        Tensor t = Tensor::Empty({len});
        for (int64_t i = 0; i < len; ++i) t[i] = float(r * 10 + i % 7);
        DTF_RETURN_IF_ERROR(c.AllReduceMean(&t));
        const float mean_r = float(n - 1) / 2.0f;
        for (int64_t i = 0; i < len; ++i) {
          const float want = mean_r * 10 + float(i % 7);
          if (std::abs(t[i] - want) > 1e-4f) {
            return InternalError(StrCat("mean[", i, "] = ", t[i], ", not ",
                                        want, " on rank ", r));
          }
        }
        float v = float(5 - r);
        DTF_RETURN_IF_ERROR(c.AllReduceMin(&v));
        if (v != float(5 - (n - 1))) {
          return InternalError(StrCat("min ", v, " on rank ", r));
        }
        Tensor b = Tensor::Filled({5}, float(r + 1));
        DTF_RETURN_IF_ERROR(c.Broadcast(&b, n - 1));
        for (int64_t i = 0; i < 5; ++i) {
          if (b[i] != float(n)) {
            return InternalError(StrCat("broadcast ", b[i], " on rank ", r));
          }
        }
        // Different sizes, one rank empty, bytes of every value.
        std::string mine = r == 1 ? "" : std::string(size_t(r + 1), char(r));
        mine += r == 0 ? std::string("\0\xff", 2) : "";
        StatusOr<std::vector<std::string>> all = c.AllGather(mine);
        DTF_RETURN_IF_ERROR(all.status());
        for (int q = 0; q < n; ++q) {
          std::string want = q == 1 ? "" : std::string(size_t(q + 1), char(q));
          want += q == 0 ? std::string("\0\xff", 2) : "";
          if ((*all)[size_t(q)] != want) {
            return InternalError(StrCat("allgather[", q, "] on rank ", r));
          }
        }
        return c.Barrier();
      });
  for (int r = 0; r < n; ++r) {
    EXPECT_TRUE(done[size_t(r)].ok()) << "rank " << r << ": " << done[r];
  }
}

// Means of small tensors, shorter than the ranks too, on odd and even
// numbers of ranks: every rank must end with the same bits, or the
// replicas drift apart.
TEST_P(GlooCollectiveTest, SmallTensorsAverageToTheSameBitsOnEveryRank) {
  const int n = GetParam();
  const std::vector<Status> done =
      RunRanks(n, Limits(30s), [n](int r, Collective& c) -> Status {
        for (const int64_t len :
             {int64_t{1}, int64_t{n - 1}, int64_t{1000}, int64_t{262144}}) {
          if (len == 0) continue;
          Tensor t = Tensor::Empty({len});
          // Values whose sum depends on the order it is taken in.
          for (int64_t i = 0; i < len; ++i) {
            t[i] = 1.0f / float(3 + r * 7 + i % 11) + float(r) * 1e7f;
          }
          DTF_RETURN_IF_ERROR(c.AllReduceMean(&t));
          for (int64_t i = 0; i < len; ++i) {
            double want = 0;
            for (int q = 0; q < n; ++q) {
              want += double(1.0f / float(3 + q * 7 + i % 11)) +
                      double(float(q) * 1e7f);
            }
            want /= n;
            if (std::abs(double(t[i]) - want) > 1e-6 * std::abs(want) + 1.0) {
              return InternalError(StrCat("mean[", i, "] of ", len, " = ", t[i],
                                          ", not ", want, " on rank ", r));
            }
          }
          StatusOr<std::vector<std::string>> all = c.AllGather(std::string(
              reinterpret_cast<const char*>(t.data()), size_t(len) * 4));
          DTF_RETURN_IF_ERROR(all.status());
          for (int q = 1; q < n; ++q) {
            if ((*all)[size_t(q)] != (*all)[0]) {
              return InternalError(StrCat("ranks 0 and ", q, " differ in ",
                                          "the mean of ", len, " floats"));
            }
          }
        }
        return c.Barrier();
      });
  for (int r = 0; r < n; ++r) {
    EXPECT_TRUE(done[size_t(r)].ok()) << "rank " << r << ": " << done[r];
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, GlooCollectiveTest,
                         ::testing::Values(2, 3, 4, 5, 6));

TEST(GlooCollectiveOneRankTest, EveryCallIsACopy) {
  MemoryStore store;
  StatusOr<std::unique_ptr<Collective>> c =
      JoinGloo(store, "one/", "127.0.0.1", 0, 1, Limits(5s), 5s);
  ASSERT_TRUE(c.ok()) << c.status();
  Tensor t = Tensor::FromValues({2}, {1.5f, -2.0f});
  ASSERT_TRUE((*c)->AllReduceMean(&t).ok());
  EXPECT_EQ(t[0], 1.5f);
  EXPECT_EQ(t[1], -2.0f);
  StatusOr<std::vector<std::string>> all = (*c)->AllGather("x");
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_THAT(*all, ElementsAre("x"));
  EXPECT_TRUE((*c)->Barrier().ok());
}

// Rank 3 of 4 joins but never calls: every other rank's allreduce fails
// within the timeout (theirs, or a neighbour that gave up first, lost),
// naming its rank; later calls fail at once.
TEST(GlooCollectiveFailureTest, ARankThatNeverCallsFailsTheOthersByTheTimeout) {
  std::atomic<int> waiting{0};
  const auto start = std::chrono::steady_clock::now();
  const std::vector<Status> done =
      RunRanks(4, Limits(2s), [&](int r, Collective& c) -> Status {
        if (r == 3) {
          // Holds its connections open, calling nothing, until the others
          // are done.
          while (waiting.load() < 3 &&
                 std::chrono::steady_clock::now() - start < 30s) {
            std::this_thread::sleep_for(10ms);
          }
          return OkStatus();
        }
        Tensor t = Tensor::Filled({1000}, 1.0f);
        const Status st = c.AllReduceMean(&t);
        const Status again = c.Barrier();
        ++waiting;
        if (st.ok()) return InternalError("the allreduce ended");
        if (again.code() != StatusCode::kFailedPrecondition) {
          return InternalError(StrCat("a later call: ", Message(again)));
        }
        return st;
      });
  const auto took = std::chrono::steady_clock::now() - start;
  for (int r = 0; r < 3; ++r) {
    const Status& st = done[size_t(r)];
    EXPECT_THAT(st.code(),
                AnyOf(StatusCode::kDeadlineExceeded, StatusCode::kUnavailable))
        << st;
    EXPECT_THAT(std::string(Message(st)),
                HasSubstr(StrCat("allreduce (mean of 1000 floats) on rank ", r,
                                 " of 4")));
  }
  // At least one rank saw its own timeout.
  int timed_out = 0;
  for (int r = 0; r < 3; ++r) {
    if (done[size_t(r)].code() == StatusCode::kDeadlineExceeded) {
      ++timed_out;
      EXPECT_THAT(std::string(Message(done[size_t(r)])),
                  HasSubstr("the test's timeout"));
    }
  }
  EXPECT_GE(timed_out, 1);
  EXPECT_LT(took, 20s);
}

// Rank 1 of 2 dies (its collective destroyed, its connections closed) while
// rank 0 waits in an allreduce: rank 0 fails at once, Unavailable, naming
// rank 1 — well before the timeout.
TEST(GlooCollectiveFailureTest, ARankThatDiesFailsThePeerNamingIt) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<Status> done =
      RunRanks(2, Limits(60s), [&](int r, Collective& c) -> Status {
        if (r == 1) {
          std::this_thread::sleep_for(300ms);
          c.Abort();
          return OkStatus();
        }
        Tensor t = Tensor::Filled({10}, 1.0f);
        return c.AllReduceMean(&t);
      });
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(done[0].code(), StatusCode::kUnavailable) << done[0];
  EXPECT_THAT(std::string(Message(done[0])), HasSubstr("on rank 0 of 2"));
  EXPECT_THAT(std::string(Message(done[0])), HasSubstr("peer rank 1"));
  EXPECT_LT(took, 30s);
}

// A write to a peer that has gone raises SIGPIPE, which by default ends
// the process (a rank killed took its chief with it): joining makes the
// process ignore it, so that the write fails the call instead.
TEST(GlooCollectiveFailureTest, JoiningIgnoresSigpipe) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ASSERT_EQ(sigaction(SIGPIPE, &dfl, nullptr), 0);
  MemoryStore store;
  StatusOr<std::unique_ptr<Collective>> c =
      JoinGloo(store, "pipe/", "127.0.0.1", 0, 1, Limits(5s), 5s);
  ASSERT_TRUE(c.ok()) << c.status();
  struct sigaction now {};
  ASSERT_EQ(sigaction(SIGPIPE, nullptr, &now), 0);
  EXPECT_EQ(now.sa_handler, SIG_IGN);
}

// A rank that never joins: the others' join ends by its timeout, naming
// their rank.
TEST(GlooCollectiveFailureTest, AJoinThatAPeerNeverMakesEndsAtTheTimeout) {
  MemoryStore store;
  const auto start = std::chrono::steady_clock::now();
  StatusOr<std::unique_ptr<Collective>> c =
      JoinGloo(store, "never/", "127.0.0.1", 0, 2, Limits(60s), 1s);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kDeadlineExceeded) << c.status();
  EXPECT_THAT(std::string(Message(c.status())), HasSubstr("rank 0 of 2"));
  EXPECT_GE(took, 1s);
  EXPECT_LT(took, 20s);
}

TEST(GlooCollectiveFailureTest, ACancelledRunFailsACallAfterTheGrace) {
  std::atomic<bool> cancel{false};
  CollectiveLimits limits = Limits(60s);
  limits.cancel = &cancel;
  limits.cancel_grace = 200ms;
  const std::vector<Status> done =
      RunRanks(2, limits, [&](int r, Collective& c) -> Status {
        DTF_RETURN_IF_ERROR(c.Barrier());
        if (r == 0) cancel = true;
        std::this_thread::sleep_for(100ms);
        // Within the grace every rank can still agree.
        float v = 1;
        DTF_RETURN_IF_ERROR(c.AllReduceMin(&v));
        std::this_thread::sleep_for(400ms);
        return c.AllReduceMin(&v);
      });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(done[size_t(r)].code(), StatusCode::kCancelled) << done[r];
  }
}

// Rank 1 of 2 joins but never calls, as a peer that hung or whose death
// Gloo does not notice: rank 0's allreduce under way when the run begins
// stopping ends `cancel_grace` later, Cancelled, not at the (minute-long)
// timeout; a later call fails at once.
TEST(GlooCollectiveFailureTest, ACallUnderWayWhenTheRunStopsEndsAfterTheGrace) {
  std::atomic<bool> cancel{false};
  std::atomic<bool> done_0{false};
  CollectiveLimits limits = Limits(60s);
  limits.cancel = &cancel;
  limits.cancel_grace = 300ms;
  std::chrono::steady_clock::duration took{};
  const std::vector<Status> done =
      RunRanks(2, limits, [&](int r, Collective& c) -> Status {
        if (r == 1) {
          std::this_thread::sleep_for(300ms);
          const auto stop = std::chrono::steady_clock::now();
          cancel = true;
          while (!done_0.load() &&
                 std::chrono::steady_clock::now() - stop < 90s) {
            std::this_thread::sleep_for(10ms);
          }
          took = std::chrono::steady_clock::now() - stop;
          return OkStatus();
        }
        Tensor t = Tensor::Filled({100000}, 1.0f);
        const Status st = c.AllReduceMean(&t);
        done_0 = true;
        const Status again = c.Barrier();
        if (again.code() != StatusCode::kFailedPrecondition) {
          return InternalError(StrCat("a later call: ", Message(again)));
        }
        return st;
      });
  EXPECT_EQ(done[0].code(), StatusCode::kCancelled) << done[0];
  EXPECT_THAT(std::string(Message(done[0])),
              HasSubstr("allreduce (mean of 100000 floats) on rank 0 of 2: "
                        "the run is being stopped"));
  EXPECT_THAT(std::string(Message(done[0])), HasSubstr("300 ms"));
  EXPECT_GE(took, 300ms);
  EXPECT_LT(took, 10s);
}

TEST(GlooCollectiveFailureTest, AnAddressNotOfThisHostIsAnError) {
  MemoryStore store;
  StatusOr<std::unique_ptr<Collective>> c =
      JoinGloo(store, "bad/", "192.0.2.1", 0, 2, Limits(5s), 5s);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(Message(c.status())), HasSubstr("192.0.2.1"));
}

TEST(GlooCollectiveFailureTest, AnUnknownHostIsAnError) {
  MemoryStore store;
  StatusOr<std::unique_ptr<Collective>> c =
      JoinGloo(store, "bad/", "no-such-host.invalid", 0, 2, Limits(5s), 5s);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(Message(c.status())),
              HasSubstr("no-such-host.invalid"));
}

}  // namespace
}  // namespace dtf::kernels
