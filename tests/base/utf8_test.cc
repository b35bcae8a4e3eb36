#include "lib/base/utf8.h"

#include <gtest/gtest.h>

#include <string_view>

namespace dtf {
namespace {

TEST(Utf8, AcceptsWellFormedText) {
  EXPECT_TRUE(IsUtf8(""));
  EXPECT_TRUE(IsUtf8("plain ascii\n"));
  EXPECT_TRUE(IsUtf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));
  EXPECT_TRUE(IsUtf8("\xF4\x8F\xBF\xBF"));  // U+10FFFF
  EXPECT_TRUE(IsUtf8(std::string_view("nul\0inside", 10)));
}

TEST(Utf8, FindsTheFirstBadByte) {
  struct Case {
    std::string_view text;
    size_t at;
  };
  const Case cases[] = {
      {"ab\xFF", 2},            // never valid
      {"\xC0\xAF", 0},          // overlong '/'
      {"x\xE0\x80\xAF", 1},     // overlong, three bytes
      {"\xED\xA0\x80", 0},      // a surrogate
      {"\xF4\x90\x80\x80", 0},  // past U+10FFFF
      {"ok\xC3", 2},            // cut short at the end
      {"\xE2\x82 more", 0},     // cut short before ASCII
      {"\xC3\xA9\x80", 2},      // a lone continuation byte
  };
  for (const Case& c : cases) {
    EXPECT_EQ(FindNonUtf8(c.text), c.at) << c.text;
    EXPECT_FALSE(IsUtf8(c.text)) << c.text;
  }
}

TEST(Utf8, StopsAtNulOrControlsWhenAsked) {
  const std::string_view text("0123456789\t abc\0def\x01", 20);
  EXPECT_EQ(FindNonUtf8(text), std::string_view::npos);
  EXPECT_EQ(FindNonUtf8(text, Utf8Stop::kNul), 15u);
  EXPECT_EQ(FindNonUtf8(text, Utf8Stop::kControls), 10u);  // the tab
  // Past eight ASCII bytes at a time, the first bad byte still counts.
  EXPECT_EQ(FindNonUtf8("abcdefghijklmnop\xFFq", Utf8Stop::kNul), 16u);
}

}  // namespace
}  // namespace dtf
