#include "lib/data/column_kind.h"

#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"

namespace dtf {
namespace {

std::vector<std::string_view> Views(const std::vector<std::string>& cells) {
  return std::vector<std::string_view>(cells.begin(), cells.end());
}

// `n` cells, `bad` of them not dates, the rest `make(i)`.
template <typename Make>
std::vector<std::string> Cells(int n, int bad, Make make) {
  std::vector<std::string> cells;
  for (int i = 0; i < n; ++i) {
    cells.push_back(i < bad ? "unknown" : make(i));
  }
  return cells;
}

std::string TwoDigits(int v) {
  return std::string(1, char('0' + v / 10)) + char('0' + v % 10);
}

TEST(LooksLikeDate, NinetyFivePercentInOneFormat) {
  auto iso = [](int i) {
    return "2024-" + TwoDigits(i % 12 + 1) + "-" + TwoDigits(i % 28 + 1);
  };
  EXPECT_TRUE(LooksLikeDate(Views(Cells(100, 5, iso))));
  EXPECT_EQ(DetectDateColumn(Views(Cells(100, 5, iso))), DateFormat::kIso);
  EXPECT_FALSE(LooksLikeDate(Views(Cells(100, 6, iso))));

  auto timestamp = [&](int i) { return iso(i) + "T10:" + TwoDigits(i % 60); };
  EXPECT_EQ(DetectDateColumn(Views(Cells(40, 0, timestamp))), DateFormat::kIso);
  // Day-first with slashes: US order fails for days above 12, so the
  // column is dmy.
  auto dmy = [](int i) {
    return TwoDigits(i % 28 + 1) + "/" + TwoDigits(i % 12 + 1) + "/2024";
  };
  EXPECT_EQ(DetectDateColumn(Views(Cells(50, 0, dmy))), DateFormat::kDmy);
  auto mdy = [](int i) {
    return TwoDigits(i % 12 + 1) + "/" + TwoDigits(i % 28 + 1) + "/2024";
  };
  EXPECT_EQ(DetectDateColumn(Views(Cells(50, 0, mdy))), DateFormat::kMdy);
  auto compact = [](int i) {
    return "2023" + TwoDigits(i % 12 + 1) + TwoDigits(i % 28 + 1);
  };
  EXPECT_EQ(DetectDateColumn(Views(Cells(50, 0, compact))),
            DateFormat::kCompact);

  // Mixed forms: each under 95%.
  std::vector<std::string> mixed = Cells(50, 0, iso);
  const std::vector<std::string> more = Cells(50, 0, compact);
  mixed.insert(mixed.end(), more.begin(), more.end());
  EXPECT_FALSE(LooksLikeDate(Views(mixed)));

  EXPECT_FALSE(LooksLikeDate({}));
  EXPECT_FALSE(LooksLikeDate({"male", "female"}));
  EXPECT_FALSE(LooksLikeDate({"12", "3.5", "7"}));
  EXPECT_FALSE(LooksLikeDate({"2024-13-01", "2024-14-01"}));
}

TEST(DatesHaveTime, AnyTimeOtherThanMidnight) {
  EXPECT_FALSE(
      DatesHaveTime({"2024-03-05", "2024-03-06T00:00:00"}, DateFormat::kIso));
  EXPECT_TRUE(
      DatesHaveTime({"2024-03-05", "2024-03-06T00:00:01"}, DateFormat::kIso));
  EXPECT_TRUE(DatesHaveTime({"03/05/2024 10:00"}, DateFormat::kMdy));
  EXPECT_FALSE(DatesHaveTime({"03/05/2024 10:00"}, DateFormat::kIso));
  EXPECT_FALSE(DatesHaveTime({}, DateFormat::kAuto));
}

TEST(LooksLikeText, ManyDistinctCellsOfSeveralWords) {
  std::vector<std::string> reviews;
  for (int i = 0; i < 40; ++i) {
    reviews.push_back("review number " + std::to_string(i) +
                      (i % 2 ? " was great" : " was awful, really"));
  }
  EXPECT_TRUE(LooksLikeText(Views(reviews)));

  // Categorical values of several tokens repeat: not text.
  std::vector<std::string> marital;
  for (int i = 0; i < 40; ++i) {
    marital.push_back(i % 2 ? "Married-civ-spouse" : "Never-married now ok");
  }
  EXPECT_FALSE(LooksLikeText(Views(marital)));

  // Distinct single words (ids, names): not text.
  std::vector<std::string> ids;
  for (int i = 0; i < 40; ++i) ids.push_back("user" + std::to_string(i));
  EXPECT_FALSE(LooksLikeText(Views(ids)));
  // Two words on average: not text.
  EXPECT_FALSE(LooksLikeText({"a b", "c d", "e f"}));
  EXPECT_TRUE(LooksLikeText({"a b c", "c d e", "e f g"}));
  EXPECT_FALSE(LooksLikeText({}));
}

}  // namespace
}  // namespace dtf
