#include "lib/data/schema_check.h"

#include <map>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/base/strings.h"

namespace dtf {
namespace {

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

}  // namespace

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

}  // namespace dtf
