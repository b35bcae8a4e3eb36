#include "lib/runtime/ps/ps_requests.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace dtf::runtime {
namespace {

kernels::IdTensor Ids(const std::vector<int64_t>& values) {
  kernels::IdTensor ids = kernels::IdTensor::Empty(int64_t(values.size()));
  std::copy(values.begin(), values.end(), ids.data());
  return ids;
}

// Compact of one input, checked against its definition: the sorted unique
// ids, and each id replaced by its position among them.
void ExpectCompacted(const std::vector<int64_t>& values) {
  ModelInputs inputs;
  inputs.ids.emplace_back().ids = Ids(values);
  std::vector<std::vector<int64_t>> unique;
  Compact(&inputs, &unique);
  std::vector<int64_t> want = values;
  std::sort(want.begin(), want.end());
  want.erase(std::unique(want.begin(), want.end()), want.end());
  ASSERT_EQ(unique.size(), 1u);
  ASSERT_EQ(unique[0], want);
  const kernels::IdTensor& got = inputs.ids[0].ids;
  ASSERT_EQ(got.size(), int64_t(values.size()));
  for (size_t k = 0; k < values.size(); ++k) {
    ASSERT_GE(got[int64_t(k)], 0) << "[" << k << "]";
    ASSERT_LT(got[int64_t(k)], int64_t(want.size())) << "[" << k << "]";
    EXPECT_EQ(want[size_t(got[int64_t(k)])], values[k]) << "[" << k << "]";
  }
}

TEST(CompactTest, MapsIdsToPositionsAmongTheSortedUniqueIds) {
  ExpectCompacted({7, 3, 7, 0, 63, 64, 65, 3, 127, 128});
  ExpectCompacted({5});
  ExpectCompacted({1000, 1000, 1000});
  // Far from 0, across word boundaries.
  ExpectCompacted({1'000'063, 1'000'000, 1'000'064, 1'000'000, 1'000'127});
}

TEST(CompactTest, RandomIdsOfNarrowAndWideRanges) {
  std::mt19937_64 random(42);
  for (const int64_t range :
       {int64_t{1}, int64_t{50}, int64_t{1000}, int64_t{100'000},
        int64_t{1} << 40, int64_t{1} << 62}) {
    for (const int n : {1, 2, 63, 64, 256, 2048}) {
      std::uniform_int_distribution<int64_t> id(0, range - 1);
      std::vector<int64_t> values(static_cast<size_t>(n));
      for (int64_t& v : values) v = id(random);
      SCOPED_TRACE(testing::Message()
                   << "range " << range << ", " << n << " ids");
      ExpectCompacted(values);
    }
  }
}

TEST(CompactTest, NegativeAndExtremeIdsKeepTheirOrder) {
  ExpectCompacted({-1, 4, -1, 2, 4});
  ExpectCompacted({INT64_MAX, 0, INT64_MAX, 3});
  ExpectCompacted({INT64_MIN, INT64_MAX, -5, 5});
}

TEST(CompactTest, SeveralInputsAndAnEmptyOne) {
  ModelInputs inputs;
  inputs.ids.emplace_back().ids = Ids({9, 4, 9});
  inputs.ids.emplace_back().ids = Ids({});
  inputs.ids.emplace_back().ids = Ids({1, 1, 1 << 20});
  std::vector<std::vector<int64_t>> unique = {{99, 98}, {97}, {}, {96}};
  Compact(&inputs, &unique);
  ASSERT_EQ(unique.size(), 3u);
  EXPECT_EQ(unique[0], (std::vector<int64_t>{4, 9}));
  EXPECT_TRUE(unique[1].empty());
  EXPECT_EQ(unique[2], (std::vector<int64_t>{1, 1 << 20}));
  EXPECT_EQ(inputs.ids[0].ids.span()[0], 1);
  EXPECT_EQ(inputs.ids[0].ids.span()[1], 0);
  EXPECT_EQ(inputs.ids[0].ids.span()[2], 1);
  EXPECT_EQ(inputs.ids[2].ids.span()[2], 1);
}

}  // namespace
}  // namespace dtf::runtime
