// How a `text` feature splits free text into terms (docs/job-file.md,
// "text"), as TensorFlow would with
//   tokens = tf.strings.split(tf.strings.regex_replace(
//       tf.strings.lower(text), r"[^a-z0-9\x{80}-\x{10ffff}]+", " "))
//   terms = tf.strings.ngrams(tokens, ngram_width=(1, 2), separator=" ")
// ASCII letters are lower-cased; a token is a maximal run of ASCII letters,
// ASCII digits and bytes >= 0x80, so UTF-8 letters (é, ß, 日本) stay inside
// their tokens, unchanged. Everything else separates tokens.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dtf {

// Appends the tokens of `text` to `*tokens`, in order.
void TextTokens(std::string_view text, std::vector<std::string>* tokens);

// The number of tokens in `text`, without building them.
int64_t CountTextTokens(std::string_view text);

// Appends the terms of `text` to `*terms`: its tokens, then, when ngrams is
// 2, each pair of neighbouring tokens joined by one space.
// REQUIRES: ngrams is 1 or 2.
void TextTerms(std::string_view text, int ngrams,
               std::vector<std::string>* terms);

}  // namespace dtf
