// ColumnProfile and PlanColumn: what init makes of a column.
#include "lib/data/column_profile.h"

#include <cmath>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/data/column_plan.h"
#include "tests/testing/temp_dir.h"

namespace dtf {
namespace {

using ::testing::HasSubstr;

// Profiles `csv` (written to a temp file) and plans each column.
struct Profiled {
  std::vector<ColumnProfile> columns;
  std::vector<ColumnPlan> plans;
  const ColumnPlan& Plan(const std::string& name) const {
    for (const ColumnPlan& p : plans) {
      if (p.name == name) return p;
    }
    ADD_FAILURE() << "no column " << name;
    return plans.front();
  }
};

StatusOr<Profiled> Profile(const std::string& csv, char delimiter = ',',
                           const std::string& label = "label") {
  testing::TempDir temp("dtf_profile_test");
  testing::WriteFile(temp.Join("in.csv"), csv);
  CsvOptions o;
  o.delimiter = delimiter;
  DTF_ASSIGN_OR_RETURN(std::vector<ColumnProfile> columns,
                       ProfileCsv(temp.Join("in.csv"), o, {"?"}, 0, label));
  Profiled out;
  PlanOptions po;
  po.label = label;
  po.delimiter = delimiter;
  for (const ColumnProfile& c : columns) out.plans.push_back(PlanColumn(c, po));
  out.columns = std::move(columns);
  return out;
}

// 4,000 rows: ids of several kinds beside columns that are no ids.
std::string IdCsv() {
  std::string csv =
      "user_id,uuid,row,customerId,name,score,income,paid,label\n";
  uint64_t x = 12345;
  auto next = [&x] {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return x >> 33;
  };
  for (int i = 0; i < 4000; ++i) {
    const uint64_t r = next();
    StrAppend(&csv, 1000 + i, ",",
              fmt::format("{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}", next(),
                          next() & 0xffff, next() & 0xfff, next() & 0xfff,
                          (next() << 16) ^ next()),
              ",", (i * 7919) % 4000, ",", next() % 100000, ",name",
              next() % 100000, ",", fmt::format("{:.6f}", (r % 100000) / 1e5),
              ",", 20000 + next() % 180000, ",", next() % 3, ",", i % 2, "\n");
  }
  return csv;
}

TEST(ColumnPlan, IdentifiersFeedNoFeatureAtAnyRowCount) {
  auto p = Profile(IdCsv());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(p->Plan("user_id").why, HasSubstr("identifier: named like one"));
  EXPECT_EQ(p->Plan("user_id").kind, PlannedFeature::kNone);
  EXPECT_EQ(p->Plan("user_id").type, ValueType::kInt);
  EXPECT_THAT(p->Plan("uuid").why, HasSubstr("identifier"));
  EXPECT_EQ(p->Plan("uuid").type, ValueType::kString);
  EXPECT_EQ(p->Plan("row").why,
            "identifier: distinct integers filling their range");
  EXPECT_THAT(p->Plan("customerId").why,
              HasSubstr("identifier: named like one"));
  EXPECT_THAT(p->Plan("name").why, HasSubstr("identifier or free text"));
  // A unique float is a measurement; random incomes are no ids; "paid" does
  // not end in an id.
  EXPECT_EQ(p->Plan("score").kind, PlannedFeature::kNumeric);
  EXPECT_TRUE(p->Plan("score").bucketize);
  EXPECT_EQ(p->Plan("income").kind, PlannedFeature::kNumeric);
  EXPECT_EQ(p->Plan("paid").kind, PlannedFeature::kNumeric);
  EXPECT_EQ(p->Plan("label").why, "label");
}

TEST(ColumnPlan, IncreasingIntegersAreIdentifiers) {
  std::string csv = "n,x,label\n";
  for (int i = 0; i < 3000; ++i) StrAppend(&csv, i * 3 + 5, ",", i % 5, ",1\n");
  auto p = Profile(csv);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->Plan("n").why, "identifier: increasing integers, all distinct");
  EXPECT_EQ(p->Plan("x").kind, PlannedFeature::kNumeric);
  EXPECT_FALSE(p->Plan("x").bucketize);
}

TEST(ColumnPlan, NaSpellingsAreMissingInANumericColumn) {
  std::string csv = "a,b,c,label\n";
  const char* na[] = {"NaN", "nan", "NA", "N/A", "null", "NULL", "None", ""};
  for (int i = 0; i < 80; ++i) {
    StrAppend(&csv, i % 10 == 0 ? na[i / 10] : StrCat(i), ",",
              i % 9 == 0 ? "NA" : StrCat(i, ".5"), ",", i % 2 ? "x" : "NA", ",",
              i * 1.5, "\n");
  }
  auto p = Profile(csv);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->Plan("a").type, ValueType::kInt);
  EXPECT_EQ(p->Plan("a").na_missing,
            (std::vector<std::string>{"N/A", "NA", "NULL", "NaN", "None", "nan",
                                      "null"}));
  EXPECT_EQ(p->Plan("b").type, ValueType::kFloat);
  EXPECT_EQ(p->Plan("b").na_missing, std::vector<std::string>{"NA"});
  // In a str column "NA" is a value.
  EXPECT_EQ(p->Plan("c").type, ValueType::kString);
  EXPECT_TRUE(p->Plan("c").na_missing.empty());
  // A float label with NaN stays a float (a regression target).
  EXPECT_EQ(p->Plan("label").type, ValueType::kFloat);
  EXPECT_EQ(p->columns[0].first_na_line, 2);
  EXPECT_EQ(p->columns[0].first_missing_line, 72);
}

TEST(ColumnPlan, CurrencyGroupsAndPercentReadAsNumbers) {
  std::string csv = "price,count,share,mixed,label\n";
  for (int i = 0; i < 60; ++i) {
    StrAppend(&csv, "\"$", i % 9 + 1, ",", 100 + i, "\",\"", 1 + i, ",700\",",
              i, ".", i % 10, "%,",
              i % 2 ? "\xE2\x82\xAC"
                      "5"
                    : "7",
              ",0\n");
  }
  auto p = Profile(csv);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->Plan("price").type, ValueType::kInt);
  EXPECT_EQ(p->Plan("price").format, ColumnFormat::kNumber);
  EXPECT_EQ(p->Plan("price").note,
            "read \"$1,100\" as 1100 (currency, groups and % signs dropped)");
  EXPECT_EQ(p->Plan("count").type, ValueType::kInt);
  EXPECT_EQ(p->Plan("count").format, ColumnFormat::kNumber);
  EXPECT_DOUBLE_EQ(p->Plan("count").min, 1700);
  EXPECT_EQ(p->Plan("share").type, ValueType::kFloat);
  EXPECT_EQ(p->Plan("share").format, ColumnFormat::kNumber);
  EXPECT_DOUBLE_EQ(p->Plan("share").max, 59.9);
  EXPECT_EQ(p->Plan("mixed").format, ColumnFormat::kNumber);
  EXPECT_EQ(p->Plan("mixed").kind, PlannedFeature::kNumeric);
}

TEST(ColumnPlan, DecimalCommaInASemicolonFile) {
  std::string csv = "w;n;t;label\n";
  for (int i = 0; i < 40; ++i) {
    StrAppend(&csv, i, ",", i % 10, ";", i % 4, ";", "1.", 100 + i, ",5;1\n");
  }
  auto p = Profile(csv, ';');
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->Plan("w").type, ValueType::kFloat);
  EXPECT_EQ(p->Plan("w").format, ColumnFormat::kDecimalComma);
  EXPECT_EQ(p->Plan("w").note, "decimal comma: read \"0,0\" as 0");
  EXPECT_DOUBLE_EQ(p->Plan("w").max, 39.9);
  EXPECT_EQ(p->Plan("n").format, ColumnFormat::kPlain);
  EXPECT_EQ(p->Plan("t").format, ColumnFormat::kDecimalComma);
  EXPECT_DOUBLE_EQ(p->Plan("t").min, 1100.5);
}

TEST(ColumnPlan, MixedTrueFalseSpellingsAreOneZeroInts) {
  std::string csv = "a,b,label\n";
  const char* spellings[] = {"yes",   "No", "Y", "n", "TRUE",
                             "false", "t",  "F", "1", "0"};
  for (int i = 0; i < 50; ++i) {
    StrAppend(&csv, spellings[i % 10], ",", i % 2, ",", i % 2, "\n");
  }
  auto p = Profile(csv);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->Plan("a").type, ValueType::kInt);
  EXPECT_EQ(p->Plan("a").format, ColumnFormat::kBool);
  EXPECT_EQ(p->Plan("a").kind, PlannedFeature::kNumeric);
  EXPECT_FALSE(p->Plan("a").bucketize);
  EXPECT_DOUBLE_EQ(p->Plan("a").mean, 0.5);
  EXPECT_THAT(p->Plan("a").note, HasSubstr("read as 1/0"));
  // Plain 0/1 stays a plain int.
  EXPECT_EQ(p->Plan("b").format, ColumnFormat::kPlain);
}

TEST(ColumnProfile, DistinctValuesPastTheExactCapAreEstimated) {
  std::string csv = "k,m,label\n";
  for (int i = 0; i < 60000; ++i)
    StrAppend(&csv, "k", i, ",v", i % 300, ",1\n");
  auto p = Profile(csv);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_NEAR(static_cast<double>(p->columns[0].distinct), 60000, 60000 * 0.04);
  EXPECT_EQ(p->columns[1].distinct, 300);
  EXPECT_TRUE(p->columns[1].counts_capped);
  EXPECT_EQ(p->Plan("m").kind, PlannedFeature::kHashed);
  EXPECT_THAT(p->Plan("k").why, HasSubstr("identifier or free text"));
}

TEST(ColumnProfile, DuplicateHeaderNamesBothPlaces) {
  auto p = Profile("a,bb,a\n1,2,3\n");
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(std::string(Message(p.status())),
              HasSubstr("in.csv:1:6: duplicate column \"a\" (also at "));
  EXPECT_THAT(std::string(Message(p.status())), HasSubstr("in.csv:1:1)"));
}

TEST(ColumnProfile, OneColumnHeaderHoldingADelimiterSuggestsIt) {
  auto p = Profile("age;income;label\n1;2;3\n");
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(std::string(Message(p.status())),
              HasSubstr("in.csv:1: the header is one column, "
                        "\"age;income;label\", which holds ';': the fields "
                        "are not separated by ','; give --delimiter ';'"));
}

// Dates (in one form, every sampled cell) and free text are their own
// features, ahead of the identifier rule that their many distinct values
// would otherwise meet; IDs of several tokens named as IDs stay IDs.
TEST(ColumnPlan, DatesAndFreeTextGetTheirOwnKinds) {
  const char* words[] = {"great",    "awful", "service", "food",  "slow",
                         "friendly", "cold",  "fresh",   "again", "never"};
  std::string csv = "when,stamp,review,order_id,city,label\n";
  for (int i = 0; i < 400; ++i) {
    StrAppend(
        &csv, fmt::format("2024-{:02d}-{:02d}", 1 + i % 12, 1 + i % 28), ",",
        fmt::format("{:02d}/{:02d}/2023 {:02d}:30", 1 + i % 12, 1 + i % 28,
                    i % 24),
        ",", words[i % 10], " ", words[(i * 3 + 1) % 10], " ",
        words[(i * 7 + 2) % 10], " number ", i, ",",
        fmt::format("ORD-2024-{:05d}", i), ",city", i % 5, ",", i % 2, "\n");
  }
  auto p = Profile(csv);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->Plan("when").kind, PlannedFeature::kDate);
  EXPECT_EQ(p->Plan("when").date_format, DateFormat::kIso);
  EXPECT_FALSE(p->Plan("when").date_has_time);
  EXPECT_EQ(p->Plan("when").date_default, "2024-01-01");
  EXPECT_EQ(p->Plan("stamp").kind, PlannedFeature::kDate);
  EXPECT_EQ(p->Plan("stamp").date_format, DateFormat::kMdy);
  EXPECT_TRUE(p->Plan("stamp").date_has_time);
  EXPECT_EQ(p->Plan("review").kind, PlannedFeature::kText);
  EXPECT_EQ(p->Plan("order_id").kind, PlannedFeature::kNone);
  EXPECT_THAT(p->Plan("order_id").why, HasSubstr("identifier"));
  EXPECT_EQ(p->Plan("city").kind, PlannedFeature::kCategorical);
  EXPECT_EQ(PlannedFeatureName(PlannedFeature::kDate), "date");
  EXPECT_EQ(PlannedFeatureName(PlannedFeature::kText), "text");
}

// A column of dates with one cell that is no date is not a date feature:
// training would stop on that cell.
TEST(ColumnPlan, ADateColumnWithABadCellIsNotADate) {
  std::string csv = "when,label\n";
  for (int i = 0; i < 100; ++i) {
    StrAppend(&csv,
              i == 50 ? "soon" : fmt::format("2024-03-{:02d}", 1 + i % 28), ",",
              i % 2, "\n");
  }
  auto p = Profile(csv);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_NE(p->Plan("when").kind, PlannedFeature::kDate);
}

}  // namespace
}  // namespace dtf
