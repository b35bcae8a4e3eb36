// What the columns of a CSV mean: each column's type, the value written when
// a cell is missing, fixed-length vector features built from several columns,
// and the label with an optional mapping of its values. The TOML form lives in
// the job file's [schema] table (docs/job-file.md); the encoder that applies a
// schema to CSV rows is lib/data/row_encoder.h.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "lib/base/status.h"

namespace dtf {

// int -> Example int64_list, float -> float_list, str -> bytes_list.
enum class ValueType { kInt, kFloat, kString };
std::string_view ValueTypeName(ValueType t);  // "int", "float", "str"
StatusOr<ValueType> ParseValueType(std::string_view name);
// "an int", "a float", "a str": the phrase after "expected".
std::string_view ValueTypeWithArticle(ValueType type);

// A typed scalar: int64_t for kInt, double for kFloat, string for kString.
using Value = std::variant<int64_t, double, std::string>;
// The type `value` holds.
ValueType TypeOfValue(const Value& value);

// Parses one cell as `type`. Ints: optional sign and decimal digits, within
// int64. Floats: decimal or exponent notation, "nan", "inf" (any case).
// Leading/trailing spaces are not accepted (the CSV reader trims them).
// On failure returns InvalidArgument with a message like
// `expected an int, got "abc"` (the caller adds the place).
StatusOr<Value> ParseValue(std::string_view text, ValueType type);
std::string ValueToString(const Value& v);

// How the cells of an int or float column are written, besides plain
// numbers (which every format accepts).
enum class ColumnFormat {
  kPlain,  // "1234.5", as ParseValue reads it
  // "$1,234.5", "-€12", "52.6%": a currency sign ($, €, £) before the number
  // (or after it, past one space), "," between groups of three digits, "."
  // before the fraction, "%" after it. The value is the number as written
  // ("52.6%" is 52.6).
  kNumber,
  // "1.234,5", "1 234,5 €", "12,5%": as kNumber with "." or " " between
  // groups and "," before the fraction.
  kDecimalComma,
  // true/false, yes/no, y/n, t/f, 1/0 in any case: 1 and 0. Int columns
  // only.
  kBool,
};
// "plain", "number", "decimal_comma", "bool".
std::string_view ColumnFormatName(ColumnFormat f);
StatusOr<ColumnFormat> ParseColumnFormat(std::string_view name);

// Parses one cell as `type` written in `format`. InvalidArgument like
// `expected a float written as 1,234.5 (format "number"), got "abc"` when it
// does not fit (the caller adds the place).
StatusOr<Value> ParseFormattedValue(std::string_view text, ValueType type,
                                    ColumnFormat format);

struct ColumnSpec {
  std::string name;
  ValueType type = ValueType::kString;
  // Written when the cell is missing. Without one, a missing cell leaves the
  // feature out of that row's Example (or rejects the row if `required`).
  std::optional<Value> default_value;
  // A missing cell with no default rejects the row. Default: false.
  bool required = false;
  // Read (it occupies a CSV column) but not written. Default: false.
  bool skip = false;
  // How the cells are written. Default: kPlain. Other formats need an int or
  // float column (kBool an int one).
  ColumnFormat format = ColumnFormat::kPlain;
};

// One fixed-length feature made of several columns, e.g. 784 pixel columns
// -> one float feature "pixels" of length 784. Member columns are not
// written on their own.
struct VectorSpec {
  std::string name;
  ValueType type = ValueType::kFloat;  // kInt or kFloat
  std::vector<std::string> columns;    // in order; each is a ColumnSpec name
  // Used for a missing element; without one a missing element rejects the
  // row.
  std::optional<Value> default_value;
};

struct LabelSpec {
  std::string column;
  // Raw cell text -> int64 label. Empty: the cell is parsed as the column's
  // type. Non-empty: a value not in the map rejects the row.
  std::map<std::string, int64_t> mapping;
};

struct Schema {
  // Without a CSV header these are the CSV's columns in order; with one,
  // columns are matched by name and CSV columns not listed are not written.
  std::vector<ColumnSpec> columns;
  std::vector<VectorSpec> vectors;
  std::optional<LabelSpec> label;
  // Cell texts that mean "missing" (after trimming) when not quoted. An
  // empty cell is missing too, except a quoted "" in a str column, which is
  // the empty string. Default: {""}.
  std::vector<std::string> missing_values = {""};

  // nullptr when absent.
  const ColumnSpec* FindColumn(std::string_view name) const;
  bool IsMissing(std::string_view cell) const;
};

// Spellings of "not available" that pandas reads as NaN. In a column that is
// numeric otherwise they are missing cells.
inline constexpr std::string_view kNaSpellings[] = {
    "NaN", "nan", "NAN", "NA", "N/A", "n/a", "null", "NULL", "Null", "None",
};
bool IsNaSpelling(std::string_view cell);

// Checks names are unique and non-empty, vector members and the label exist,
// vector types are int or float, defaults match their types.
// InvalidArgument naming the offending key otherwise. Defined with its
// checks in lib/data/schema_check.cc.
Status ValidateSchema(const Schema& schema);

// Infers column types the way TFX does: a column is int if every non-missing
// value parses as int64, else float if every one parses as a float, else str.
// NA spellings (kNaSpellings) in a column that is numeric otherwise are
// missing cells, and Finish adds the ones seen to the schema's missing
// values. A column with no values at all is str. Not thread-safe.
class SchemaInferrer {
 public:
  SchemaInferrer(std::vector<std::string> column_names,
                 std::vector<std::string> missing_values);
  // `cells`: one record's fields; extra cells beyond the named columns get
  // names "column_<i>" (1-based).
  void Add(const std::vector<std::string_view>& cells);
  // `label`: when non-empty, marks that column as the label; a str label gets
  // a mapping of its distinct values, sorted, to 0, 1, 2, ...
  StatusOr<Schema> Finish(std::string_view label = {}) const;
  int64_t rows() const { return rows_; }

 private:
  struct ColumnState {
    std::string name;
    bool can_int = true;
    bool can_float = true;
    int64_t values = 0;
    std::map<std::string, int64_t, std::less<>> distinct;  // capped
    std::vector<std::string> na_seen;  // NA spellings among its cells
  };
  std::vector<ColumnState> columns_;
  std::vector<std::string> missing_;
  int64_t rows_ = 0;
};

}  // namespace dtf
