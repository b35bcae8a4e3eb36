#include "lib/base/os.h"

#include <cstring>
#include <memory>

#include "gtest/gtest.h"

namespace dtf {
namespace {

TEST(ResidentBytes, GrowsWithWhatThisProcessTouches) {
  const int64_t before = ResidentBytes();
  EXPECT_GT(before, 0);
  constexpr size_t kSize = size_t{64} << 20;
  std::unique_ptr<char[]> block(new char[kSize]);
  std::memset(block.get(), 1, kSize);
  const int64_t after = ResidentBytes();
  EXPECT_GE(after - before, int64_t{48} << 20)
      << "before " << before << ", after " << after;
  EXPECT_EQ(block[kSize - 1], 1);
}

TEST(HumanBytes, UsesPowersOf1024) {
  EXPECT_EQ(HumanBytes(0), "0B");
  EXPECT_EQ(HumanBytes(1023), "1023B");
  EXPECT_EQ(HumanBytes(1024), "1.0K");
  EXPECT_EQ(HumanBytes(int64_t{412} << 20), "412M");
  EXPECT_EQ(HumanBytes(int64_t{3} << 29), "1.5G");
}

}  // namespace
}  // namespace dtf
