// CallWatch (call_watch.h): a call under way is given up only once the run
// has been stopping for the grace, again until it returns, and never after.
#include "lib/kernels/call_watch.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "gtest/gtest.h"

namespace dtf::kernels {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// How often a call of `length` under `watch` was asked to give up.
int AskedDuring(CallWatch& watch, std::chrono::milliseconds length) {
  std::atomic<int> asked{0};
  {
    CallWatch::Scope scope(&watch, [&] { ++asked; });
    std::this_thread::sleep_for(length);
  }
  return asked.load();
}

TEST(CallWatchTest, ACallIsNotGivenUpWhileTheRunGoesOn) {
  std::atomic<bool> cancel{false};
  CallWatch watch(&cancel, 50ms);
  EXPECT_EQ(AskedDuring(watch, 300ms), 0);
  EXPECT_FALSE(watch.gave_up());
}

TEST(CallWatchTest, ACallEndingWithinTheGraceIsNotGivenUp) {
  std::atomic<bool> cancel{true};
  CallWatch watch(&cancel, 2s);
  EXPECT_EQ(AskedDuring(watch, 200ms), 0);
  EXPECT_FALSE(watch.gave_up());
}

// The call waits for its give_up, which ends one wait of three each time:
// asked again until the call returns, then no more.
TEST(CallWatchTest, ACallPastTheGraceIsGivenUpUntilItReturns) {
  std::atomic<bool> cancel{false};
  CallWatch watch(&cancel, 200ms);
  std::atomic<int> asked{0};
  const auto start = Clock::now();
  Clock::duration took{};
  {
    CallWatch::Scope scope(&watch, [&] { ++asked; });
    std::this_thread::sleep_for(100ms);
    cancel = true;
    while (asked.load() < 3 && Clock::now() - start < 20s) {
      std::this_thread::sleep_for(1ms);
    }
    took = Clock::now() - start;
  }
  const int at_end = asked.load();
  EXPECT_GE(at_end, 3);
  EXPECT_TRUE(watch.gave_up());
  EXPECT_GE(took, 300ms);  // the grace, counted from the cancel
  EXPECT_LT(took, 5s);
  std::this_thread::sleep_for(150ms);
  EXPECT_EQ(asked.load(), at_end) << "asked after the call returned";
  // The next call starts afresh, the run still stopping: given up at once.
  {
    CallWatch::Scope scope(&watch, [&] { ++asked; });
    EXPECT_FALSE(watch.gave_up());
    while (asked.load() == at_end && Clock::now() - start < 20s) {
      std::this_thread::sleep_for(1ms);
    }
  }
  EXPECT_TRUE(watch.gave_up());
}

}  // namespace
}  // namespace dtf::kernels
