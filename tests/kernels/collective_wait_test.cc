// The wait for an NCCL call (collective_wait.h) against a scripted
// communicator: done, an asynchronous error, a stream error, the timeout
// and a cancel — each failure aborting the communicator once.
#include "lib/kernels/collective_wait.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dtf::kernels {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;
using WaitClock = std::chrono::steady_clock;

// Answers each poll from its script (numbered from 0) and counts the
// polls and aborts. By default the call is done at once.
class ScriptedComm : public CommProgress {
 public:
  // The asynchronous state at poll n: sets *in_progress, or fails.
  std::function<Status(int n, bool* in_progress)> async;
  // Whether the stream is done at its poll n.
  std::function<StatusOr<bool>(int n)> stream;

  int async_polls = 0;
  int stream_polls = 0;
  int aborts = 0;
  // async_polls when the stream was first asked; -1: never.
  int first_stream_poll_after = -1;

  Status AsyncState(bool* in_progress) override {
    EXPECT_EQ(aborts, 0) << "polled after the abort";
    *in_progress = false;
    const int n = async_polls++;
    return async ? async(n, in_progress) : OkStatus();
  }
  StatusOr<bool> StreamDone() override {
    EXPECT_EQ(aborts, 0) << "polled after the abort";
    if (first_stream_poll_after < 0) first_stream_poll_after = async_polls;
    const int n = stream_polls++;
    return stream ? stream(n) : StatusOr<bool>(true);
  }
  void Abort() override { ++aborts; }
};

CollectiveLimits Limits(std::chrono::milliseconds timeout) {
  CollectiveLimits limits;
  limits.timeout = timeout;
  limits.timeout_name = "collective_timeout in [train]";
  return limits;
}

constexpr char kCall[] = "ncclAllReduce (mean of 10 floats)";
constexpr char kRank[] = "rank 1 of 2";

TEST(WaitForCommTest, ACollectiveIsDoneOnceEnqueuedAndItsStreamRan) {
  ScriptedComm comm;
  comm.async = [](int n, bool* in_progress) {
    *in_progress = n < 3;  // ncclInProgress while enqueuing
    return OkStatus();
  };
  comm.stream = [](int n) -> StatusOr<bool> { return n >= 4; };
  const Status st =
      WaitForComm(comm, WaitUntil::kStreamDone, kCall, kRank, Limits(60s));
  EXPECT_TRUE(st.ok()) << st;
  EXPECT_EQ(comm.aborts, 0);
  EXPECT_EQ(comm.stream_polls, 5);
  // The stream is not asked while NCCL still enqueues (the kernel may not
  // be on it yet).
  EXPECT_EQ(comm.first_stream_poll_after, 4);
}

TEST(WaitForCommTest, ACommunicatorWaitDoesNotWaitForTheStream) {
  ScriptedComm comm;
  comm.async = [](int n, bool* in_progress) {
    *in_progress = n < 2;
    return OkStatus();
  };
  comm.stream = [](int) -> StatusOr<bool> { return false; };
  const Status st = WaitForComm(comm, WaitUntil::kCommunicatorReady,
                                "ncclCommInitRankConfig", kRank, Limits(60s));
  EXPECT_TRUE(st.ok()) << st;
  EXPECT_EQ(comm.async_polls, 3);
  EXPECT_EQ(comm.stream_polls, 0);
  EXPECT_EQ(comm.aborts, 0);
}

TEST(WaitForCommTest, AnAsynchronousErrorAbortsAndIsNamed) {
  ScriptedComm comm;
  comm.async = [](int n, bool*) {
    if (n < 5) return OkStatus();
    return UnavailableError(
        "asynchronous error: NCCL error 6 (remote process exited or there "
        "was a network error)");
  };
  comm.stream = [](int) -> StatusOr<bool> { return false; };
  const Status st =
      WaitForComm(comm, WaitUntil::kStreamDone, kCall, kRank, Limits(60s));
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st;
  EXPECT_THAT(std::string(Message(st)),
              HasSubstr("ncclAllReduce (mean of 10 floats) on rank 1 of 2: "
                        "asynchronous error: NCCL error 6 (remote process "
                        "exited"));
  EXPECT_THAT(std::string(Message(st)),
              HasSubstr("the NCCL communicator was aborted"));
  EXPECT_EQ(comm.aborts, 1);
  EXPECT_EQ(comm.async_polls, 6);
}

TEST(WaitForCommTest, AStreamErrorAborts) {
  ScriptedComm comm;
  comm.stream = [](int n) -> StatusOr<bool> {
    if (n < 2) return false;
    return InternalError("the stream of the NCCL communicator: cudaErrorX");
  };
  const Status st =
      WaitForComm(comm, WaitUntil::kStreamDone, kCall, kRank, Limits(60s));
  EXPECT_EQ(st.code(), StatusCode::kInternal) << st;
  EXPECT_THAT(std::string(Message(st)),
              HasSubstr("on rank 1 of 2: the stream of the NCCL "
                        "communicator: cudaErrorX"));
  EXPECT_EQ(comm.aborts, 1);
}

TEST(WaitForCommTest, ACollectivePastTheTimeoutAborts) {
  ScriptedComm comm;
  comm.stream = [](int) -> StatusOr<bool> { return false; };  // a peer hangs
  const auto start = WaitClock::now();
  const Status st =
      WaitForComm(comm, WaitUntil::kStreamDone, kCall, kRank, Limits(150ms));
  const auto took = WaitClock::now() - start;
  EXPECT_EQ(st.code(), StatusCode::kDeadlineExceeded) << st;
  EXPECT_THAT(std::string(Message(st)),
              HasSubstr("ncclAllReduce (mean of 10 floats) on rank 1 of 2: "
                        "not done within 150 ms (collective_timeout in "
                        "[train])"));
  EXPECT_EQ(comm.aborts, 1);
  EXPECT_GE(took, 150ms);
  EXPECT_LT(took, 10s);
}

TEST(WaitForCommTest, AJoinPastTheTimeoutAborts) {
  ScriptedComm comm;
  comm.async = [](int, bool* in_progress) {
    *in_progress = true;  // a rank never joins
    return OkStatus();
  };
  const auto start = WaitClock::now();
  const Status st =
      WaitForComm(comm, WaitUntil::kCommunicatorReady, "ncclCommInitRankConfig",
                  "rank 0 of 3", Limits(2s));
  const auto took = WaitClock::now() - start;
  EXPECT_EQ(st.code(), StatusCode::kDeadlineExceeded) << st;
  EXPECT_THAT(std::string(Message(st)),
              HasSubstr("ncclCommInitRankConfig on rank 0 of 3: not done "
                        "within 2 s (collective_timeout in [train])"));
  EXPECT_EQ(comm.aborts, 1);
  EXPECT_EQ(comm.stream_polls, 0);
  EXPECT_GE(took, 2s);
  EXPECT_LT(took, 20s);
}

TEST(WaitForCommTest, AnAsynchronousErrorWhileJoiningAborts) {
  ScriptedComm comm;
  comm.async = [](int n, bool* in_progress) {
    *in_progress = true;
    if (n < 3) return OkStatus();
    return UnavailableError(
        "asynchronous error: NCCL error 2 (unhandled "
        "system error): connection refused");
  };
  const Status st = WaitForComm(comm, WaitUntil::kCommunicatorReady,
                                "ncclCommInitRankConfig", kRank, Limits(60s));
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st;
  EXPECT_THAT(std::string(Message(st)),
              HasSubstr("ncclCommInitRankConfig on rank 1 of 2: "
                        "asynchronous error: NCCL error 2"));
  EXPECT_EQ(comm.aborts, 1);
}

TEST(WaitForCommTest, ACancelAbortsAfterTheGrace) {
  ScriptedComm comm;
  comm.stream = [](int) -> StatusOr<bool> { return false; };
  std::atomic<bool> cancel{false};
  CollectiveLimits limits = Limits(600s);
  limits.cancel = &cancel;
  limits.cancel_grace = 200ms;
  // Timed from before the stopper starts, so its 100 ms count from here.
  const auto start = WaitClock::now();
  std::thread stopper([&] {
    std::this_thread::sleep_for(100ms);
    cancel = true;
  });
  const Status st =
      WaitForComm(comm, WaitUntil::kStreamDone, kCall, kRank, limits);
  const auto took = WaitClock::now() - start;
  stopper.join();
  EXPECT_EQ(st.code(), StatusCode::kCancelled) << st;
  EXPECT_THAT(std::string(Message(st)),
              HasSubstr("ncclAllReduce (mean of 10 floats) on rank 1 of 2: "
                        "cancelled, the run being stopped"));
  EXPECT_EQ(comm.aborts, 1);
  // The cancel came at 100 ms and had 200 ms of grace.
  EXPECT_GE(took, 300ms);
  EXPECT_LT(took, 10s);
}

TEST(WaitForCommTest, ACollectiveThatEndsWithinTheCancelGraceSucceeds) {
  ScriptedComm comm;
  const auto start = WaitClock::now();
  comm.stream = [&](int) -> StatusOr<bool> {
    return WaitClock::now() - start >= 50ms;
  };
  std::atomic<bool> cancel{true};
  CollectiveLimits limits = Limits(600s);
  limits.cancel = &cancel;
  limits.cancel_grace = 30s;
  const Status st =
      WaitForComm(comm, WaitUntil::kStreamDone, kCall, kRank, limits);
  EXPECT_TRUE(st.ok()) << st;
  EXPECT_EQ(comm.aborts, 0);
}

TEST(WaitForCommTest, ACancelWithNoGraceAbortsAtOnce) {
  ScriptedComm comm;
  comm.async = [](int, bool* in_progress) {
    *in_progress = true;
    return OkStatus();
  };
  std::atomic<bool> cancel{true};
  CollectiveLimits limits = Limits(600s);
  limits.cancel = &cancel;
  limits.cancel_grace = 0ms;
  const Status st = WaitForComm(comm, WaitUntil::kCommunicatorReady,
                                "ncclCommInitRankConfig", kRank, limits);
  EXPECT_EQ(st.code(), StatusCode::kCancelled) << st;
  EXPECT_EQ(comm.aborts, 1);
  EXPECT_EQ(comm.async_polls, 1);
}

}  // namespace
}  // namespace dtf::kernels
