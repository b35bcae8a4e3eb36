// CallThread (call_thread.h): calls run on its thread one after another,
// their exceptions reach the caller, and a call the caller gives up on is
// left to end alone while the caller goes on.
#include "lib/kernels/call_thread.h"

#include <atomic>
#include <chrono>
#include <future>
#include <stdexcept>
#include <thread>

#include "gtest/gtest.h"

namespace dtf::kernels {
namespace {

using namespace std::chrono_literals;

TEST(CallThreadTest, RunsEachCallOnItsThreadAndWaitsForIt) {
  CallThread calls;
  std::thread::id ran_on;
  int value = 0;
  for (int i = 1; i <= 3; ++i) {
    EXPECT_TRUE(calls.Run(
        [&] {
          std::this_thread::sleep_for(120ms);  // past several polls
          ran_on = std::this_thread::get_id();
          value += i;
        },
        [] { return false; }, 10ms));
    EXPECT_EQ(value, i * (i + 1) / 2);
    EXPECT_NE(ran_on, std::this_thread::get_id());
  }
  EXPECT_FALSE(calls.abandoned());
}

TEST(CallThreadTest, ACallsExceptionReachesTheCaller) {
  CallThread calls;
  EXPECT_THROW(calls.Run([] { throw std::runtime_error("peer lost"); },
                         [] { return false; }, 10ms),
               std::runtime_error);
  // The thread takes the next call.
  bool ran = false;
  EXPECT_TRUE(calls.Run([&] { ran = true; }, [] { return false; }, 10ms));
  EXPECT_TRUE(ran);
}

TEST(CallThreadTest, ACallGivenUpOnEndsAloneAndNoMoreCallsRun) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  auto ended = std::make_shared<std::atomic<bool>>(false);
  int asked = 0;
  {
    CallThread calls;
    const auto start = std::chrono::steady_clock::now();
    EXPECT_FALSE(calls.Run(
        [released, ended] {
          released.wait();
          *ended = true;
        },
        [&] { return ++asked == 3; }, 20ms));
    EXPECT_EQ(asked, 3);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
    EXPECT_TRUE(calls.abandoned());
    bool ran = false;
    EXPECT_FALSE(calls.Run([&] { ran = true; }, [] { return false; }, 10ms));
    EXPECT_FALSE(ran);
  }  // destroyed while the abandoned call still waits: no join, no crash
  EXPECT_FALSE(ended->load());
  release.set_value();
  for (int i = 0; i < 500 && !ended->load(); ++i) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(ended->load());
}

}  // namespace
}  // namespace dtf::kernels
