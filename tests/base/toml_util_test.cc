#include "lib/base/toml_util.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
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

}  // namespace
}  // namespace dtf::toml_util
