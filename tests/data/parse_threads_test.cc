#include "lib/data/parse_threads.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace dtf {
namespace {

TEST(ParseThreads, RunsEveryIndexOnceAtATimeAndWaits) {
  for (int n : {1, 2, 4}) {
    ParseThreads threads(n);
    EXPECT_EQ(threads.size(), n);
    for (int round = 0; round < 50; ++round) {
      std::vector<std::atomic<int>> hits(n);
      std::atomic<int> zero_on_caller{0};
      const std::thread::id caller = std::this_thread::get_id();
      threads.Run([&](int i) {
        hits[i].fetch_add(1);
        if (i == 0 && std::this_thread::get_id() == caller) ++zero_on_caller;
      });
      // Run returned: every index ran, once.
      for (int i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << n << " " << i;
      EXPECT_EQ(zero_on_caller.load(), 1);
    }
  }
}

}  // namespace
}  // namespace dtf
