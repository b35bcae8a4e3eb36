#include <algorithm>
#include <charconv>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/base/strings.h"
#include "lib/data/schema.h"

namespace dtf {
namespace {

// Distinct values kept per column; a column with more keeps this many plus
// one, which marks it as over the cap.
constexpr size_t kMaxDistinct = 1000;

bool IsInt(std::string_view text) {
  if (!text.empty() && text[0] == '+') {
    text.remove_prefix(1);
    if (text.empty() || text[0] == '-') return false;
  }
  int64_t value;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ec == std::errc() && ptr == end;
}

}  // namespace

SchemaInferrer::SchemaInferrer(std::vector<std::string> column_names,
                               std::vector<std::string> missing_values)
    : missing_(std::move(missing_values)) {
  columns_.reserve(column_names.size());
  for (std::string& name : column_names) {
    columns_.emplace_back().name = std::move(name);
  }
}

void SchemaInferrer::Add(const std::vector<std::string_view>& cells) {
  ++rows_;
  for (size_t i = 0; i < cells.size(); ++i) {
    if (i == columns_.size()) {
      columns_.emplace_back().name = absl::StrCat("column_", i + 1);
    }
    const std::string_view cell = cells[i];
    if (cell.empty() ||
        std::find(missing_.begin(), missing_.end(), cell) != missing_.end()) {
      continue;
    }
    ColumnState& c = columns_[i];
    if (IsNaSpelling(cell)) {
      if (std::find(c.na_seen.begin(), c.na_seen.end(), cell) ==
          c.na_seen.end()) {
        c.na_seen.emplace_back(cell);
      }
      // A value of a str column, kept for its distinct count; no evidence
      // against a numeric one.
      if (auto it = c.distinct.find(cell); it != c.distinct.end()) {
        ++it->second;
      } else if (c.distinct.size() <= kMaxDistinct) {
        c.distinct.emplace(std::string(cell), 1);
      }
      continue;
    }
    ++c.values;
    if (c.can_int && !IsInt(cell)) c.can_int = false;
    if (!c.can_int && c.can_float &&
        !ParseValue(cell, ValueType::kFloat).ok()) {
      c.can_float = false;
    }
    if (auto it = c.distinct.find(cell); it != c.distinct.end()) {
      ++it->second;
    } else if (c.distinct.size() <= kMaxDistinct) {
      c.distinct.emplace(std::string(cell), 1);
    }
  }
}

StatusOr<Schema> SchemaInferrer::Finish(std::string_view label) const {
  Schema schema;
  for (const std::string& m : missing_) {
    if (std::find(schema.missing_values.begin(), schema.missing_values.end(),
                  m) == schema.missing_values.end()) {
      schema.missing_values.push_back(m);
    }
  }
  schema.columns.reserve(columns_.size());
  for (const ColumnState& c : columns_) {
    ColumnSpec spec;
    spec.name = c.name;
    if (c.values > 0 && c.can_int) {
      spec.type = ValueType::kInt;
    } else if (c.values > 0 && c.can_float) {
      spec.type = ValueType::kFloat;
    } else {
      spec.type = ValueType::kString;
    }
    if (spec.type != ValueType::kString) {
      for (const std::string& na : c.na_seen) {
        if (std::find(schema.missing_values.begin(),
                      schema.missing_values.end(),
                      na) == schema.missing_values.end()) {
          schema.missing_values.push_back(na);
        }
      }
    }
    schema.columns.push_back(std::move(spec));
  }
  if (!label.empty()) {
    const auto it =
        std::find_if(columns_.begin(), columns_.end(),
                     [&](const ColumnState& c) { return c.name == label; });
    if (it == columns_.end()) {
      return InvalidArgumentError(
          absl::StrFormat("label column %s is not one of the %d columns",
                          QuoteForMessage(label), columns_.size()));
    }
    LabelSpec spec;
    spec.column = it->name;
    if (schema.columns[it - columns_.begin()].type == ValueType::kString) {
      if (it->distinct.size() > kMaxDistinct) {
        return InvalidArgumentError(absl::StrFormat(
            "label column %s has more than %d distinct values; give its "
            "mapping in [schema] label.map",
            QuoteForMessage(label), kMaxDistinct));
      }
      int64_t next = 0;
      for (const auto& [value, count] : it->distinct) {
        spec.mapping.emplace(value, next++);
      }
    }
    schema.label = std::move(spec);
  }
  DTF_RETURN_IF_ERROR(ValidateSchema(schema));
  return schema;
}

}  // namespace dtf
