#include "lib/data/csv_sniff.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace dtf {
namespace {

TEST(CsvSniff, PicksTheDelimiterThatSplitsEveryLineAlike) {
  EXPECT_EQ(SniffDelimiterText("a,b,c\n1,2,3\n4,5,6\n"), ',');
  EXPECT_EQ(SniffDelimiterText("age;income;label\n1;2,5;0\n3;4,25;1\n"), ';');
  EXPECT_EQ(SniffDelimiterText("a\tb\n1\t2\n"), '\t');
  EXPECT_EQ(SniffDelimiterText("a|b|c\n1|x, y|3\n"), '|');
  // A comma inside quotes does not count.
  EXPECT_EQ(SniffDelimiterText("a;b\n\"1,5\";2\n\"x,y,z\";3\n"), ';');
  EXPECT_EQ(SniffDelimiterText("\xEF\xBB\xBFk;v\n1;2\n"), ';');
  EXPECT_EQ(SniffDelimiterText("single\n1\n2\n"), ',');
  EXPECT_EQ(SniffDelimiterText(""), ',');
}

TEST(CsvSniff, TsvFilesAreTabSeparated) {
  testing::TempDir temp("dtf_sniff_test");
  testing::WriteFile(temp.Join("a.tsv"), "a,b\n1,2\n");
  testing::WriteFile(temp.Join("a.csv"), "a;b\n1;2\n");
  EXPECT_EQ(*SniffDelimiter(temp.Join("a.tsv")), '\t');
  EXPECT_EQ(*SniffDelimiter(temp.Join("a.csv")), ';');
  EXPECT_FALSE(SniffDelimiter(temp.Join("none.csv")).ok());
}

TEST(CsvSniff, OneColumnHeaderHoldingAnotherDelimiterIsAnError) {
  EXPECT_TRUE(CheckHeaderSplit("f.csv", {"a", "b"}, ',').ok());
  EXPECT_TRUE(CheckHeaderSplit("f.csv", {"plain"}, ',').ok());
  Status st = CheckHeaderSplit("f.csv", {"a\tb"}, ',');
  EXPECT_EQ(std::string(Message(st)),
            "f.csv:1: the header is one column, \"a\\tb\", which holds a tab: "
            "the fields are not separated by ','; give --delimiter tab");
}

}  // namespace
}  // namespace dtf
