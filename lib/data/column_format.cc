// Cells written as people write numbers and truth values: ColumnFormat.
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/base/strings.h"
#include "lib/data/schema.h"

namespace dtf {
namespace {

constexpr std::string_view kCurrencies[] = {"$", "\xE2\x82\xAC" /* € */,
                                            "\xC2\xA3" /* £ */};

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Removes a currency sign at the front (`front`) or back of `*s`, with one
// space between it and the number.
bool StripCurrency(std::string_view* s, bool front) {
  for (std::string_view sign : kCurrencies) {
    if (front && s->starts_with(sign)) {
      s->remove_prefix(sign.size());
      if (s->starts_with(' ')) s->remove_prefix(1);
      return true;
    }
    if (!front && s->ends_with(sign)) {
      s->remove_suffix(sign.size());
      if (s->ends_with(' ')) s->remove_suffix(1);
      return true;
    }
  }
  return false;
}

bool StripSign(std::string_view* s, bool* negative) {
  if (s->empty() || (s->front() != '-' && s->front() != '+')) return false;
  *negative = s->front() == '-';
  s->remove_prefix(1);
  return true;
}

// `body` (digits in groups of three after the first, then a fraction) as a
// plain number: "1,234.5" -> "1234.5". False when it is not one.
bool PlainDigits(std::string_view body, char group, char decimal,
                 std::string* out) {
  const size_t point = body.find(decimal);
  std::string_view whole = body.substr(0, point);
  std::string_view fraction =
      point == std::string_view::npos ? "" : body.substr(point + 1);
  if (point != std::string_view::npos && fraction.empty()) return false;
  for (char c : fraction) {
    if (!IsDigit(c)) return false;
  }
  size_t run = 0;
  bool grouped = false;
  for (char c : whole) {
    if (IsDigit(c)) {
      ++run;
      out->push_back(c);
    } else if (c == group || (group == '.' && c == ' ')) {
      // The first group holds 1 to 3 digits, the others exactly 3.
      if (run == 0 || run > 3 || (grouped && run != 3)) return false;
      grouped = true;
      run = 0;
    } else {
      return false;
    }
  }
  if (grouped && run != 3) return false;
  if (whole.empty() && fraction.empty()) return false;
  if (whole.empty()) out->push_back('0');
  if (!fraction.empty()) {
    out->push_back('.');
    out->append(fraction);
  }
  return true;
}

// `text` under kNumber or kDecimalComma as a plain number, or false.
bool PlainNumber(std::string_view text, ColumnFormat format, std::string* out) {
  std::string_view s = text;
  bool negative = false;
  bool signed_ = StripSign(&s, &negative);
  bool currency = StripCurrency(&s, true);
  if (currency && !signed_) signed_ = StripSign(&s, &negative);
  if (!s.empty() && s.back() == '%') {
    s.remove_suffix(1);
    if (s.ends_with(' ')) s.remove_suffix(1);
  } else if (!currency) {
    StripCurrency(&s, false);
  }
  out->clear();
  if (negative) out->push_back('-');
  const char group = format == ColumnFormat::kDecimalComma ? '.' : ',';
  const char decimal = format == ColumnFormat::kDecimalComma ? ',' : '.';
  return PlainDigits(s, group, decimal, out);
}

bool EqualsLower(std::string_view text, std::string_view lower) {
  if (text.size() != lower.size()) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != lower[i]) return false;
  }
  return true;
}

}  // namespace

std::string_view ColumnFormatName(ColumnFormat f) {
  switch (f) {
    case ColumnFormat::kPlain:
      return "plain";
    case ColumnFormat::kNumber:
      return "number";
    case ColumnFormat::kDecimalComma:
      return "decimal_comma";
    case ColumnFormat::kBool:
      return "bool";
  }
  return "plain";
}

StatusOr<ColumnFormat> ParseColumnFormat(std::string_view name) {
  for (ColumnFormat f : {ColumnFormat::kPlain, ColumnFormat::kNumber,
                         ColumnFormat::kDecimalComma, ColumnFormat::kBool}) {
    if (name == ColumnFormatName(f)) return f;
  }
  return InvalidArgumentError(
      absl::StrCat("unknown format ", QuoteForMessage(name),
                   " (expected plain, number, decimal_comma or bool)"));
}

StatusOr<Value> ParseFormattedValue(std::string_view text, ValueType type,
                                    ColumnFormat format) {
  switch (format) {
    case ColumnFormat::kPlain:
      return ParseValue(text, type);
    case ColumnFormat::kBool:
      for (std::string_view t : {"true", "yes", "y", "t", "1"}) {
        if (EqualsLower(text, t)) {
          return type == ValueType::kFloat ? Value(1.0) : Value(int64_t{1});
        }
      }
      for (std::string_view f : {"false", "no", "n", "f", "0"}) {
        if (EqualsLower(text, f)) {
          return type == ValueType::kFloat ? Value(0.0) : Value(int64_t{0});
        }
      }
      return InvalidArgumentError(absl::StrCat(
          "expected true or false (yes/no, y/n, t/f, 1/0; format \"bool\"), "
          "got ",
          QuoteForMessage(text)));
    case ColumnFormat::kNumber:
    case ColumnFormat::kDecimalComma:
      break;
  }
  if (format == ColumnFormat::kNumber) {
    StatusOr<Value> plain = ParseValue(text, type);
    if (plain.ok()) return plain;
  }
  std::string number;
  if (PlainNumber(text, format, &number)) {
    StatusOr<Value> v = ParseValue(number, type);
    if (v.ok()) return v;
  }
  const bool comma = format == ColumnFormat::kDecimalComma;
  const bool is_int = type == ValueType::kInt;
  return InvalidArgumentError(absl::StrFormat(
      "expected %s written as %s (format \"%s\"), got %s",
      ValueTypeWithArticle(type),
      is_int ? (comma ? "1.234" : "1,234") : (comma ? "1.234,5" : "1,234.5"),
      ColumnFormatName(format), QuoteForMessage(text)));
}

}  // namespace dtf
