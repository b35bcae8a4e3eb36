#include "lib/runtime/ps/fanout.h"

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace dtf::runtime {
namespace {

TEST(Fanout, RunsEveryIndexOnceOnItsOwnThread) {
  Fanout fanout(4);
  for (int round = 0; round < 200; ++round) {
    std::vector<std::atomic<int>> calls(4);
    std::vector<std::thread::id> threads(4);
    fanout.Run([&](int i) {
      calls[size_t(i)]++;
      threads[size_t(i)] = std::this_thread::get_id();
    });
    for (int i = 0; i < 4; ++i) ASSERT_EQ(calls[size_t(i)], 1) << round;
    EXPECT_EQ(threads[0], std::this_thread::get_id());
    EXPECT_EQ(std::set<std::thread::id>(threads.begin(), threads.end()).size(),
              4u);
  }
}

TEST(Fanout, OneIndexRunsInline) {
  Fanout fanout(1);
  std::thread::id ran;
  fanout.Run([&](int i) {
    EXPECT_EQ(i, 0);
    ran = std::this_thread::get_id();
  });
  EXPECT_EQ(ran, std::this_thread::get_id());
}

}  // namespace
}  // namespace dtf::runtime
