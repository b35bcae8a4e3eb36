#include "lib/data/text_tokens.h"

#include <cstdint>

namespace dtf {
namespace {

bool IsTokenByte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c >= 0x80;
}

char LowerAscii(char c) {
  return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c;
}

}  // namespace

void TextTokens(std::string_view text, std::vector<std::string>* tokens) {
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && !IsTokenByte(static_cast<unsigned char>(text[i])))
      ++i;
    if (i == text.size()) break;
    std::string token;
    while (i < text.size() &&
           IsTokenByte(static_cast<unsigned char>(text[i]))) {
      token += LowerAscii(text[i++]);
    }
    tokens->push_back(std::move(token));
  }
}

int64_t CountTextTokens(std::string_view text) {
  int64_t n = 0;
  bool in_token = false;
  for (char c : text) {
    const bool token = IsTokenByte(static_cast<unsigned char>(c));
    n += token && !in_token;
    in_token = token;
  }
  return n;
}

void TextTerms(std::string_view text, int ngrams,
               std::vector<std::string>* terms) {
  const size_t first = terms->size();
  TextTokens(text, terms);
  if (ngrams < 2) return;
  const size_t last = terms->size();
  for (size_t i = first; i + 1 < last; ++i) {
    std::string bigram = (*terms)[i];
    bigram += ' ';
    bigram += (*terms)[i + 1];
    terms->push_back(std::move(bigram));
  }
}

}  // namespace dtf
