#include "lib/data/schema.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/base/strings.h"
#include "lib/base/toml_text.h"

namespace dtf {
namespace {

// Drops a leading '+', which std::from_chars does not accept; false when the
// sign is followed by another sign or nothing.
bool StripPlus(std::string_view* text) {
  if (text->empty() || (*text)[0] != '+') return true;
  text->remove_prefix(1);
  return !text->empty() && (*text)[0] != '-' && (*text)[0] != '+';
}

StatusOr<Value> ParseInt(std::string_view text) {
  std::string_view digits = text;
  int64_t value = 0;
  if (StripPlus(&digits)) {
    const char* end = digits.data() + digits.size();
    const auto [ptr, ec] = std::from_chars(digits.data(), end, value);
    if (ptr == end && ec == std::errc()) return Value(value);
    if (ptr == end && ec == std::errc::result_out_of_range) {
      return InvalidArgumentError(
          absl::StrCat("int out of range: ", QuoteForMessage(text)));
    }
  }
  return InvalidArgumentError(
      absl::StrCat("expected an int, got ", QuoteForMessage(text)));
}

StatusOr<Value> ParseFloat(std::string_view text) {
  std::string_view number = text;
  double value = 0;
  if (StripPlus(&number)) {
    const char* end = number.data() + number.size();
    const auto [ptr, ec] =
        std::from_chars(number.data(), end, value, std::chars_format::general);
    if (ptr == end && ec == std::errc()) return Value(value);
    if (ptr == end && ec == std::errc::result_out_of_range) {
      // Underflow reads as the nearest double (0 or subnormal), as strtod
      // gives it; overflow is an error.
      const std::string copy(number);
      value = std::strtod(copy.c_str(), nullptr);
      if (std::isfinite(value)) return Value(value);
      return InvalidArgumentError(
          absl::StrCat("float out of range: ", QuoteForMessage(text)));
    }
  }
  return InvalidArgumentError(
      absl::StrCat("expected a float, got ", QuoteForMessage(text)));
}

std::string TomlValue(const Value& v) {
  if (const int64_t* i = std::get_if<int64_t>(&v)) return absl::StrCat(*i);
  if (const double* d = std::get_if<double>(&v)) return toml_util::Float(*d);
  return toml_util::Quote(std::get<std::string>(v));
}

// Whether "name:type[=default]" reads back to `c`.
bool HasCompactForm(const ColumnSpec& c) {
  const std::string_view spaces = " \t";
  return !c.required && !c.skip && c.format == ColumnFormat::kPlain &&
         !c.name.empty() && c.name.find_first_of(":=") == std::string::npos &&
         spaces.find(c.name.front()) == std::string_view::npos &&
         spaces.find(c.name.back()) == std::string_view::npos &&
         (!c.default_value || TypeOfValue(*c.default_value) == c.type);
}

std::string CompactForm(const ColumnSpec& c) {
  std::string s = absl::StrFormat("%s:%s", c.name, ValueTypeName(c.type));
  if (c.default_value) {
    const std::string text = ValueToString(*c.default_value);
    s += c.type == ValueType::kString ? absl::StrCat("='", text, "'")
                                      : absl::StrCat("=", text);
  }
  return s;
}

// `name` as an fnmatch pattern that matches only itself.
std::string EscapeGlob(const std::string& name) {
  std::string out;
  for (const char c : name) {
    if (c == '*' || c == '?' || c == '[' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

std::string LabelMap(const LabelSpec& label, std::string_view separator) {
  std::string out;
  for (const auto& [text, id] : label.mapping) {
    if (!out.empty()) out += separator;
    out += absl::StrFormat("%s = %d", toml_util::Quote(text), id);
  }
  return out;
}

}  // namespace

std::string_view ValueTypeWithArticle(ValueType type) {
  switch (type) {
    case ValueType::kInt:
      return "an int";
    case ValueType::kFloat:
      return "a float";
    case ValueType::kString:
      return "a str";
  }
  return "a str";
}

ValueType TypeOfValue(const Value& value) {
  switch (value.index()) {
    case 0:
      return ValueType::kInt;
    case 1:
      return ValueType::kFloat;
    default:
      return ValueType::kString;
  }
}

std::string_view ValueTypeName(ValueType t) {
  switch (t) {
    case ValueType::kInt:
      return "int";
    case ValueType::kFloat:
      return "float";
    case ValueType::kString:
      return "str";
  }
  return "str";
}

bool IsNaSpelling(std::string_view cell) {
  if (cell.size() < 2 || cell.size() > 4) return false;
  return std::find(std::begin(kNaSpellings), std::end(kNaSpellings), cell) !=
         std::end(kNaSpellings);
}

StatusOr<ValueType> ParseValueType(std::string_view name) {
  if (name == "int") return ValueType::kInt;
  if (name == "float") return ValueType::kFloat;
  if (name == "str") return ValueType::kString;
  return InvalidArgumentError(absl::StrCat(
      "unknown type ", QuoteForMessage(name), " (expected int, float or str)"));
}

StatusOr<Value> ParseValue(std::string_view text, ValueType type) {
  switch (type) {
    case ValueType::kInt:
      return ParseInt(text);
    case ValueType::kFloat:
      return ParseFloat(text);
    case ValueType::kString:
      break;
  }
  return Value(std::string(text));
}

std::string ValueToString(const Value& v) {
  if (const int64_t* i = std::get_if<int64_t>(&v)) return absl::StrCat(*i);
  if (const double* d = std::get_if<double>(&v)) return FormatDouble(*d);
  return std::get<std::string>(v);
}

const ColumnSpec* Schema::FindColumn(std::string_view name) const {
  for (const ColumnSpec& c : columns) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

bool Schema::IsMissing(std::string_view cell) const {
  if (cell.empty()) return true;
  for (const std::string& m : missing_values) {
    if (m == cell) return true;
  }
  return false;
}

std::string SchemaToToml(const Schema& schema) {
  constexpr size_t kMaxInlineLabels = 8;
  std::string out = "[schema]\n";
  std::string missing;
  for (const std::string& m : schema.missing_values) {
    if (m.empty()) continue;
    absl::StrAppend(&missing, missing.empty() ? "" : ", ", toml_util::Quote(m));
  }
  if (!missing.empty()) absl::StrAppend(&out, "missing = [", missing, "]\n");
  const bool inline_label =
      schema.label && schema.label->mapping.size() <= kMaxInlineLabels;
  if (inline_label && schema.label->mapping.empty()) {
    absl::StrAppend(&out, "label = ", toml_util::Quote(schema.label->column),
                    "\n");
  } else if (inline_label) {
    absl::StrAppend(
        &out, "label = { column = ", toml_util::Quote(schema.label->column),
        ", map = { ", LabelMap(*schema.label, ", "), " } }\n");
  }
  const bool compact =
      std::all_of(schema.columns.begin(), schema.columns.end(), HasCompactForm);
  if (compact && !schema.columns.empty()) {
    out += "columns = [\n";
    for (const ColumnSpec& c : schema.columns) {
      absl::StrAppend(&out, "  ", toml_util::Quote(CompactForm(c)), ",\n");
    }
    out += "]\n";
  }
  if (schema.label && !inline_label) {
    absl::StrAppend(
        &out,
        "\n[schema.label]\ncolumn = ", toml_util::Quote(schema.label->column),
        "\n\n[schema.label.map]\n", LabelMap(*schema.label, "\n"), "\n");
  }
  for (size_t i = 0; !compact && i < schema.columns.size(); ++i) {
    const ColumnSpec& c = schema.columns[i];
    absl::StrAppend(&out,
                    "\n[[schema.columns]]\nname = ", toml_util::Quote(c.name),
                    "\ntype = ", toml_util::Quote(ValueTypeName(c.type)), "\n");
    if (c.default_value) {
      absl::StrAppend(&out, "default = ", TomlValue(*c.default_value), "\n");
    }
    if (c.required) out += "required = true\n";
    if (c.skip) out += "skip = true\n";
    if (c.format != ColumnFormat::kPlain) {
      absl::StrAppend(&out,
                      "format = ", toml_util::Quote(ColumnFormatName(c.format)),
                      "\n");
    }
  }
  for (const VectorSpec& v : schema.vectors) {
    absl::StrAppend(
        &out, "\n[[schema.vectors]]\nname = ", toml_util::Quote(v.name),
        "\ntype = ", toml_util::Quote(ValueTypeName(v.type)), "\ncolumns = [");
    for (size_t i = 0; i < v.columns.size(); ++i) {
      absl::StrAppend(&out, i == 0 ? "" : ", ",
                      toml_util::Quote(EscapeGlob(v.columns[i])));
    }
    out += "]\n";
    if (v.default_value) {
      absl::StrAppend(&out, "default = ", TomlValue(*v.default_value), "\n");
    }
  }
  return out;
}

}  // namespace dtf
