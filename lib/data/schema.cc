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
#include "lib/data/job_file.h"
#include "lib/data/schema_internal.h"

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

// "expected a float, got "x"" for a default of the wrong type.
std::string MismatchMessage(const Value& value, ValueType want) {
  std::string got;
  switch (TypeOfValue(value)) {
    case ValueType::kString:
      got = QuoteForMessage(std::get<std::string>(value));
      break;
    case ValueType::kInt:
      got = absl::StrCat("int ", ValueToString(value));
      break;
    case ValueType::kFloat:
      got = absl::StrCat("float ", ValueToString(value));
      break;
  }
  return absl::StrFormat("expected %s, got %s", ValueTypeWithArticle(want),
                         got);
}

std::optional<SchemaProblem> Problem(std::string key, std::string message) {
  return SchemaProblem{std::move(key), std::move(message)};
}

using ColumnIndex = std::map<std::string_view, size_t>;

std::optional<SchemaProblem> CheckColumns(const Schema& schema,
                                          ColumnIndex* seen) {
  for (size_t i = 0; i < schema.columns.size(); ++i) {
    const ColumnSpec& c = schema.columns[i];
    const std::string key = absl::StrCat("schema.columns[", i, "]");
    if (c.name.empty()) return Problem(key + ".name", "empty column name");
    const auto [it, inserted] = seen->emplace(c.name, i);
    if (!inserted) {
      return Problem(key + ".name",
                     absl::StrFormat("duplicate column %s (also "
                                     "schema.columns[%d])",
                                     QuoteForMessage(c.name), it->second));
    }
    if (c.default_value && TypeOfValue(*c.default_value) != c.type) {
      return Problem(key + ".default",
                     MismatchMessage(*c.default_value, c.type));
    }
    if (c.format == ColumnFormat::kBool && c.type != ValueType::kInt) {
      return Problem(key + ".format",
                     absl::StrFormat("format \"bool\" needs an int column, "
                                     "not %s",
                                     ValueTypeName(c.type)));
    }
    if (c.format != ColumnFormat::kPlain && c.type == ValueType::kString) {
      return Problem(key + ".format",
                     absl::StrFormat("format \"%s\" needs an int or float "
                                     "column, not str",
                                     ColumnFormatName(c.format)));
    }
  }
  return std::nullopt;
}

std::optional<SchemaProblem> CheckVectors(
    const Schema& schema, const ColumnIndex& columns,
    std::map<std::string_view, std::string>* member_of) {
  std::map<std::string_view, size_t> seen;
  for (size_t i = 0; i < schema.vectors.size(); ++i) {
    const VectorSpec& v = schema.vectors[i];
    const std::string key = absl::StrCat("schema.vectors[", i, "]");
    if (v.name.empty()) return Problem(key + ".name", "empty vector name");
    const auto [it, inserted] = seen.emplace(v.name, i);
    if (!inserted) {
      return Problem(key + ".name",
                     absl::StrFormat("duplicate vector %s (also "
                                     "schema.vectors[%d])",
                                     QuoteForMessage(v.name), it->second));
    }
    if (columns.count(v.name) != 0) {
      return Problem(key + ".name",
                     absl::StrFormat("%s is also a column name; the vector "
                                     "needs a name of its own",
                                     QuoteForMessage(v.name)));
    }
    if (v.type == ValueType::kString) {
      return Problem(key + ".type", "a vector must be int or float, not str");
    }
    if (v.columns.empty()) return Problem(key + ".columns", "no columns");
    for (const std::string& name : v.columns) {
      const auto found = columns.find(name);
      if (found == columns.end()) {
        return Problem(key + ".columns",
                       absl::StrCat("unknown column ", QuoteForMessage(name)));
      }
      const ColumnSpec* column = &schema.columns[found->second];
      const auto [owner, added] = member_of->emplace(name, v.name);
      if (!added) {
        return Problem(key + ".columns",
                       absl::StrFormat("column %s is already in vector %s",
                                       QuoteForMessage(name),
                                       QuoteForMessage(owner->second)));
      }
      const bool fits =
          column->type == v.type ||
          (column->type == ValueType::kInt && v.type == ValueType::kFloat);
      if (!fits) {
        return Problem(
            key + ".columns",
            absl::StrFormat("column %s is %s, which does not fit %s vector",
                            QuoteForMessage(name), ValueTypeName(column->type),
                            ValueTypeWithArticle(v.type)));
      }
    }
    if (v.default_value && TypeOfValue(*v.default_value) != v.type) {
      return Problem(key + ".default",
                     MismatchMessage(*v.default_value, v.type));
    }
  }
  return std::nullopt;
}

std::optional<SchemaProblem> CheckLabel(
    const Schema& schema,
    const std::map<std::string_view, std::string>& member_of) {
  if (!schema.label) return std::nullopt;
  const std::string& name = schema.label->column;
  if (name.empty()) return Problem("schema.label.column", "empty column name");
  const ColumnSpec* column = schema.FindColumn(name);
  if (column == nullptr) {
    return Problem("schema.label.column",
                   absl::StrCat("unknown column ", QuoteForMessage(name)));
  }
  if (column->skip) {
    return Problem("schema.label.column",
                   absl::StrFormat("column %s is marked skip = true",
                                   QuoteForMessage(name)));
  }
  if (const auto it = member_of.find(name); it != member_of.end()) {
    return Problem(
        "schema.label.column",
        absl::StrFormat("column %s is part of vector %s", QuoteForMessage(name),
                        QuoteForMessage(it->second)));
  }
  return std::nullopt;
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

std::optional<SchemaProblem> FindSchemaProblem(const Schema& schema) {
  ColumnIndex columns;
  if (auto problem = CheckColumns(schema, &columns)) return problem;
  std::map<std::string_view, std::string> member_of;
  if (auto problem = CheckVectors(schema, columns, &member_of)) return problem;
  return CheckLabel(schema, member_of);
}

Status ValidateSchema(const Schema& schema) {
  const std::optional<SchemaProblem> problem = FindSchemaProblem(schema);
  if (!problem) return OkStatus();
  return InvalidArgumentError(
      absl::StrCat(problem->key, ": ", problem->message));
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
