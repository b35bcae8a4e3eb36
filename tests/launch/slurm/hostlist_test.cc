#include "lib/launch/slurm/hostlist.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dtf::launch::slurm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<std::string> Expand(std::string_view list) {
  StatusOr<std::vector<std::string>> hosts = ExpandHostlist(list);
  EXPECT_TRUE(hosts.ok()) << list << ": " << hosts.status();
  return hosts.ok() ? *hosts : std::vector<std::string>{};
}

std::string ErrorOf(std::string_view list) {
  StatusOr<std::vector<std::string>> hosts = ExpandHostlist(list);
  EXPECT_FALSE(hosts.ok()) << list;
  if (hosts.ok()) return "";
  EXPECT_EQ(hosts.status().code(), StatusCode::kInvalidArgument);
  return std::string(Message(hosts.status()));
}

TEST(Hostlist, PlainNames) {
  EXPECT_THAT(Expand("vm"), ElementsAre("vm"));
  EXPECT_THAT(Expand("a,b,a"), ElementsAre("a", "b", "a"));
  EXPECT_THAT(Expand("a b"), ElementsAre("a", "b"));
  EXPECT_THAT(Expand("n1.example.org"), ElementsAre("n1.example.org"));
  EXPECT_THAT(Expand(""), IsEmpty());
  EXPECT_THAT(Expand("n[1-2],,m"), ElementsAre("n1", "n2", "m"));
}

TEST(Hostlist, KeepsZeroPadding) {
  EXPECT_THAT(Expand("node[01-04]"),
              ElementsAre("node01", "node02", "node03", "node04"));
  EXPECT_THAT(Expand("x[009-011]"), ElementsAre("x009", "x010", "x011"));
  EXPECT_THAT(Expand("x[8-12]"), ElementsAre("x8", "x9", "x10", "x11", "x12"));
  // The width is the range start's, as Slurm takes it.
  EXPECT_THAT(Expand("n[01-3]"), ElementsAre("n01", "n02", "n03"));
  EXPECT_THAT(Expand("n[1-03]"), ElementsAre("n1", "n2", "n3"));
  EXPECT_THAT(Expand("n[007]"), ElementsAre("n007"));
}

TEST(Hostlist, SeveralRangesInOneGroup) {
  EXPECT_THAT(Expand("n[1-3,7,10-12]"),
              ElementsAre("n1", "n2", "n3", "n7", "n10", "n11", "n12"));
  EXPECT_THAT(Expand("n[1,1]"), ElementsAre("n1", "n1"));
}

TEST(Hostlist, SeveralPrefixes) {
  EXPECT_THAT(Expand("a[1-2],b3,c[08-10]"),
              ElementsAre("a1", "a2", "b3", "c08", "c09", "c10"));
  EXPECT_THAT(Expand("x-[1-2]"), ElementsAre("x-1", "x-2"));
  EXPECT_THAT(Expand("[1-2]"), ElementsAre("1", "2"));
}

TEST(Hostlist, TextAfterAGroup) {
  EXPECT_THAT(Expand("rack[1-2]-gpu"), ElementsAre("rack1-gpu", "rack2-gpu"));
  EXPECT_THAT(Expand("n[1-2].dom,m"), ElementsAre("n1.dom", "n2.dom", "m"));
}

TEST(Hostlist, SeveralGroupsGiveEveryCombination) {
  EXPECT_THAT(Expand("r[1-2]n[1-2]"),
              ElementsAre("r1n1", "r1n2", "r2n1", "r2n2"));
  EXPECT_THAT(Expand("a[1-2]b[01-02]c"),
              ElementsAre("a1b01c", "a1b02c", "a2b01c", "a2b02c"));
}

TEST(Hostlist, RefusesUnbalancedBrackets) {
  EXPECT_EQ(ErrorOf("a[1-2"), "hostlist \"a[1-2\":2: '[' without ']'");
  EXPECT_EQ(ErrorOf("n[1-2]]"), "hostlist \"n[1-2]]\":7: ']' without '['");
  EXPECT_EQ(ErrorOf("a]"), "hostlist \"a]\":2: ']' without '['");
  EXPECT_THAT(ErrorOf("a[1-[2]]"), HasSubstr(":5: expected a number, got '['"));
  EXPECT_THAT(ErrorOf("a[1[2]]"), HasSubstr(":4: '[' inside brackets"));
}

TEST(Hostlist, RefusesBadRanges) {
  EXPECT_EQ(ErrorOf("a[3-1]"),
            "hostlist \"a[3-1]\":3: range 3-1 runs backwards");
  EXPECT_EQ(ErrorOf("a[]"), "hostlist \"a[]\":3: empty range");
  EXPECT_EQ(ErrorOf("n[a-b]"),
            "hostlist \"n[a-b]\":3: expected a number, got 'a'");
  EXPECT_THAT(ErrorOf("n[1-]"), HasSubstr(":5: expected a number, got ']'"));
  EXPECT_THAT(ErrorOf("n[-1]"), HasSubstr(":3: expected a number, got '-'"));
  EXPECT_THAT(ErrorOf("n[1--2]"), HasSubstr(":5: expected a number, got '-'"));
  EXPECT_THAT(ErrorOf("n[ 1-2]"), HasSubstr(":3: expected a number, got ' '"));
  EXPECT_THAT(ErrorOf("n[1 ,2]"), HasSubstr(":4: expected ',', '-' or ']'"));
  EXPECT_THAT(ErrorOf("n[1234567890123456789]"), HasSubstr("number too long"));
}

TEST(Hostlist, RefusesHugeLists) {
  EXPECT_THAT(ErrorOf("n[1-999999]"),
              HasSubstr(":3: expands to more than 65536 host names"));
  EXPECT_THAT(ErrorOf("a[1-300]b[1-300]"),
              HasSubstr(":1: expands to more than 65536 host names"));
  EXPECT_THAT(ErrorOf("n[0-40000],m[0-40000]"),
              HasSubstr(":12: expands to more than 65536 host names"));
  EXPECT_EQ(Expand("n[1-65536]").size(), 65536u);
}

}  // namespace
}  // namespace dtf::launch::slurm
