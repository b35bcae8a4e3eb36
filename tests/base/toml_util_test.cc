#include "lib/base/toml_util.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/toml_limits.h"
#include "lib/base/toml_text.h"

namespace dtf::toml_util {
namespace {

using ::testing::HasSubstr;

TEST(TomlText, QuoteEscapes) {
  EXPECT_EQ(Quote("plain"), "\"plain\"");
  EXPECT_EQ(Quote("a\"b\\c\n\t\r"), "\"a\\\"b\\\\c\\n\\t\\r\"");
  EXPECT_EQ(Quote(std::string("\x01\x7f", 2)), "\"\\u0001\\u007F\"");
}

TEST(TomlText, KeyPartIsBareWhenTomlAllows) {
  EXPECT_EQ(KeyPart("batch_size-2"), "batch_size-2");
  EXPECT_EQ(KeyPart("a.b"), "\"a.b\"");
  EXPECT_EQ(KeyPart(""), "\"\"");
}

TEST(TomlUtil, ClosestSuggestsOnlyNearNames) {
  EXPECT_EQ(Closest("wokers", {"ps", "workers"}), "workers");
  EXPECT_EQ(Closest("zzz", {"ps", "workers"}), "");
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
}

TEST(TomlUtil, ParseTextErrorNamesSourceLineAndColumn) {
  StatusOr<toml::table> t = ParseText("a = 1\nb = \n", "p.toml");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(t.status()), HasSubstr("p.toml:2:"));
  EXPECT_TRUE(ParseText("a = 1\n", "p.toml").ok());
}

TEST(TomlUtil, ReaderErrorsNameFileLineColumnAndKey) {
  StatusOr<toml::table> t =
      ParseText("[train]\nbatch = \"x\"\nsteps = 5\nwokers = 2\n", "j.toml");
  ASSERT_TRUE(t.ok()) << t.status();
  Reader r("j.toml");
  const toml::table& train = *(*t)["train"].as_table();
  StatusOr<int64_t> batch = r.GetInt(*train.get("batch"), "train.batch");
  ASSERT_FALSE(batch.ok());
  EXPECT_EQ(Message(batch.status()),
            "j.toml:2:9: train.batch: expected an integer, got \"x\"");
  EXPECT_EQ(Message(r.CheckKeys(train, "train", {"batch", "steps", "workers"})),
            "j.toml:4:1: train.wokers: unknown key (did you mean workers?)");
  int64_t steps = 0;
  ASSERT_TRUE(r.ReadInt(train, "train", "steps", 1, &steps).ok());
  EXPECT_EQ(steps, 5);
  EXPECT_EQ(r.Where("train.steps.x").begin.line, 3u);
}

// Top-level keys are "keys" too; a key another kind of file has gets the
// message `foreign` gives it, any other the closest allowed one.
TEST(TomlUtil, CheckKnownKeysNamesForeignAndUnknownKeys) {
  StatusOr<toml::table> t = ParseText("ps = 1\nhosts = []\n", "p.toml");
  ASSERT_TRUE(t.ok()) << t.status();
  Reader r("p.toml");
  auto foreign = [](std::string_view name) -> std::string {
    return name == "hosts" ? "not for this backend" : "";
  };
  EXPECT_EQ(Message(r.CheckKnownKeys(*t, "", {"ps", "workers"}, foreign)),
            "p.toml:2:1: hosts: not for this backend");
  EXPECT_EQ(Message(r.CheckKnownKeys(*t, "", {"ps", "host"})),
            "p.toml:2:1: hosts: unknown key (did you mean host?)");
  EXPECT_TRUE(r.CheckKnownKeys(*t, "", {"ps", "hosts"}, foreign).ok());
}

std::string Repeat(std::string_view s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// A header of 100,000 dotted parts overflowed toml++'s stack (SIGSEGV).
TEST(TomlLimits, HugeDottedTableHeaderIsRefusedWithItsPlace) {
  const std::string text = "x = 1\n[" + Repeat("a.", 100000) + "a]\n";
  StatusOr<toml::table> t = ParseText(text, "deep.toml");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  // The 32nd dot, after "[" and 32 "a", is column 2 + 31 * 2 + 1.
  EXPECT_THAT(Message(t.status()), HasSubstr("deep.toml:2:65: "));
  EXPECT_THAT(Message(t.status()), HasSubstr("more than 32 parts"));
}

TEST(TomlLimits, DeepArraysAndInlineTablesAreRefused) {
  StatusOr<toml::table> arrays =
      ParseText("v = " + Repeat("[", 100000) + Repeat("]", 100000), "a.toml");
  ASSERT_FALSE(arrays.ok());
  EXPECT_THAT(Message(arrays.status()), HasSubstr("a.toml:1:37: "));
  EXPECT_THAT(Message(arrays.status()),
              HasSubstr("nested more than 32 deep (dtf's limit)"));
  StatusOr<toml::table> tables = ParseText(
      "v = " + Repeat("{a = ", 5000) + "1" + Repeat("}", 5000), "t.toml");
  ASSERT_FALSE(tables.ok());
  EXPECT_THAT(Message(tables.status()), HasSubstr("t.toml:1:"));
  EXPECT_THAT(Message(tables.status()), HasSubstr("nested more than 32 deep"));
  EXPECT_FALSE(
      ParseText("v = " + Repeat("{a.", 3000) + "b = 1" + Repeat("}", 3000),
                "k.toml")
          .ok());
}

TEST(TomlLimits, WithinTheLimitsParsesAndStringsAndCommentsDoNotCount) {
  const std::string ok = "[" + Repeat("a.", 31) + "a]\nv = " + Repeat("[", 31) +
                         Repeat("]", 31) + "\n";
  EXPECT_TRUE(ParseText(ok, "ok.toml").ok());
  const std::string dots = Repeat(".", 1000);
  const std::string quoted = "s = \"" + dots + "[{\"\nl = '" + dots + "'\n# " +
                             dots + "[[[\n" + "m = \"\"\"\n" + dots +
                             "\n[[[\"\"\"\nf = 1.5\n";
  StatusOr<toml::table> t = ParseText(quoted, "q.toml");
  ASSERT_TRUE(t.ok()) << Message(t.status());
  EXPECT_EQ(t->get("f")->value_or(0.0), 1.5);
}

TEST(TomlLimits, OversizedDocumentIsRefusedStatingTheCap) {
  const std::string big(kMaxTomlBytes + 1, '\n');
  StatusOr<toml::table> t = ParseText(big, "big.toml");
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(Message(t.status()), HasSubstr("big.toml:1:1: "));
  EXPECT_THAT(Message(t.status()), HasSubstr("limit of 4194304 bytes (4 MiB)"));
}

}  // namespace
}  // namespace dtf::toml_util
