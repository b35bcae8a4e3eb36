#include "lib/data/text_tokens.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dtf {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::vector<std::string> Terms(std::string_view text, int ngrams) {
  std::vector<std::string> terms;
  TextTerms(text, ngrams, &terms);
  return terms;
}

// The terms TensorFlow 2.21 gives (tests/runtime/model/feature_layer_test.cc
// holds their hash ids):
//   tokens = tf.strings.split(tf.strings.regex_replace(
//       tf.strings.lower(text), r"[^a-z0-9\x{80}-\x{10ffff}]+", " "))
//   tf.strings.ngrams(tokens, ngram_width=(1, 2), separator=" ")
TEST(TextTerms, MatchTensorFlowsTokensAndBigrams) {
  EXPECT_THAT(
      Terms("The QUICK brown fox -- isn't café-au-lait? Ünïcode 42x", 2),
      ElementsAre("the", "quick", "brown", "fox", "isn", "t", "café", "au",
                  "lait", "Ünïcode", "42x", "the quick", "quick brown",
                  "brown fox", "fox isn", "isn t", "t café", "café au",
                  "au lait", "lait Ünïcode", "Ünïcode 42x"));
  EXPECT_THAT(Terms("", 2), IsEmpty());
  EXPECT_THAT(Terms(" ,;- ", 2), IsEmpty());
  EXPECT_THAT(Terms("one", 2), ElementsAre("one"));
  EXPECT_THAT(
      Terms("日本語のテキスト, Straße!", 2),
      ElementsAre("日本語のテキスト", "straße", "日本語のテキスト straße"));
  EXPECT_THAT(Terms("Good\tGOOD\ngood", 1),
              ElementsAre("good", "good", "good"));
}

TEST(TextTerms, AppendAndCount) {
  std::vector<std::string> terms = {"kept"};
  TextTerms("a b", 2, &terms);
  EXPECT_THAT(terms, ElementsAre("kept", "a", "b", "a b"));
  EXPECT_EQ(CountTextTokens("The QUICK brown fox -- isn't"), 6);
  EXPECT_EQ(CountTextTokens(""), 0);
  EXPECT_EQ(CountTextTokens("...x..."), 1);
}

}  // namespace
}  // namespace dtf
