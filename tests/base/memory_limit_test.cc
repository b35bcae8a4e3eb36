#include "lib/base/memory_limit.h"

#include <sys/resource.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace dtf {
namespace {

namespace fs = std::filesystem;

bool Unlimited() {
  rlimit as{};
  return ::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur == RLIM_INFINITY;
}

// A cgroup tree whose root holds `value` as both v1's and v2's limit file:
// whatever /proc/self/cgroup names, the walk up finds it.
void WriteLimits(const std::string& root, const std::string& value) {
  fs::create_directories(fs::path(root) / "memory");
  std::ofstream(fs::path(root) / "memory.max") << value << "\n";
  std::ofstream(fs::path(root) / "memory" / "memory.limit_in_bytes")
      << value << "\n";
}

TEST(MemoryLimit, ReadsTheCgroupLimit) {
  if (!Unlimited()) GTEST_SKIP() << "this shell has a ulimit -v";
  dtf::testing::TempDir dir;
  WriteLimits(dir.path(), "123456789");
  const std::optional<MemoryLimit> limit = ReadMemoryLimit(dir.path());
  ASSERT_TRUE(limit.has_value());
  EXPECT_EQ(limit->bytes, 123456789);
  EXPECT_FALSE(limit->address_space);
  EXPECT_NE(limit->source.find("cgroup memory."), std::string::npos)
      << limit->source;
  EXPECT_GT(MemoryInUse(*limit), 0);
}

TEST(MemoryLimit, MaxAndV1sNoLimitAreNone) {
  if (!Unlimited()) GTEST_SKIP() << "this shell has a ulimit -v";
  dtf::testing::TempDir dir;
  fs::create_directories(fs::path(dir.path()) / "memory");
  std::ofstream(fs::path(dir.path()) / "memory.max") << "max\n";
  std::ofstream(fs::path(dir.path()) / "memory" / "memory.limit_in_bytes")
      << "9223372036854771712\n";
  EXPECT_FALSE(ReadMemoryLimit(dir.path()).has_value());
}

}  // namespace
}  // namespace dtf
