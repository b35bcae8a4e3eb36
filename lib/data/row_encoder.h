// Applies a Schema to CSV rows: each row becomes one serialized
// tf.train.Example (docs/formats/example.md), encoded straight into the wire
// format with the features in key order, so the bytes equal protobuf's
// deterministic serialization.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lib/base/status.h"
#include "lib/data/csv_reader.h"
#include "lib/data/schema.h"

namespace dtf {

class RowEncoder {
 public:
  // `header`: the CSV's header names, or empty when the CSV has none (then
  // the schema's columns are the CSV's columns, in order). Fails when a
  // schema column is not in the header, naming it and `source`. `quote`:
  // the CSV's quote character, for the columns of messages.
  static StatusOr<RowEncoder> Create(const Schema& schema,
                                     const std::vector<std::string>& header,
                                     std::string_view source, char quote = '"');

  // Working memory of Encode, reused across rows; one per thread.
  class Scratch {
   private:
    friend class RowEncoder;
    struct Slot {
      int kind = 0;  // 0 absent, else ValueType + 1
      size_t first = 0;
      size_t count = 0;
      size_t payload = 0;  // packed int64 bytes
      size_t list_size = 0;
      size_t feature_size = 0;
      size_t entry_size = 0;
    };
    std::vector<Slot> slots;
    std::vector<int64_t> ints;
    std::vector<float> floats;
    std::vector<std::string_view> bytes;
  };

  // Appends the Example for `row` to `*out`. A row that does not fit the
  // schema (more or fewer fields than the header, or without a header than
  // the schema has columns, at the row's own line; a str cell that is not
  // UTF-8 or holds a NUL byte; a value of the wrong type, a required cell
  // missing, the label cell missing (empty or a missing value) while the
  // label column has no default, a label not in the map) is InvalidArgument
  // "source:line:col: ..." (the physical line and column where the cell
  // starts) and leaves `*out` as it was. Thread-safe for
  // distinct `scratch` objects.
  Status Encode(const CsvRow& row, std::string_view source, Scratch* scratch,
                std::string* out) const;

  // The row-shape part of Encode: InvalidArgument "source:line:col: row has
  // N fields, the header has M" unless `row` has fields() fields.
  Status CheckFields(const CsvRow& row, std::string_view source) const;

  // Index in the CSV row of column `name` (the first, when the header names
  // it twice), or -1. Constant time.
  int CsvIndex(std::string_view name) const;
  // Fields a row has: the header's, or the schema's columns without one.
  int fields() const { return static_cast<int>(csv_names_.size()); }

 private:
  // One feature of the output Example, in key order.
  struct Output {
    std::string name;
    std::string key_prefix;  // map-entry key field: tag, length, name
    ValueType type = ValueType::kString;
    std::vector<int> csv_index;  // one for a scalar, several for a vector
    bool has_default = false;
    Value default_value;
    bool required = false;
    // The label column: a missing cell without a default rejects the row.
    bool label = false;
    // Label with a value map: cells are looked up in `label_.mapping`.
    bool mapped = false;
    // How a scalar column's cells are written.
    ColumnFormat format = ColumnFormat::kPlain;
    // csv_index[0] when the feature is one plain column, else -1.
    int scalar_index = -1;
  };
  // The common case, inlined: one column holding a plain value. False when
  // Parse must decide (a missing or mapped cell, a value that needs the
  // slow parser or is wrong).
  bool ParseScalar(const Output& o, std::string_view cell, Scratch* s,
                   Scratch::Slot* slot) const;
  Status Parse(const Output& o, const CsvRow& row, std::string_view source,
               Scratch* s, Scratch::Slot* slot) const;
  Status ParseCell(const Output& o, std::string_view cell, Scratch* s) const;

  // Hashes std::string and std::string_view alike, so that lookups by
  // string_view copy nothing.
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const {
      return std::hash<std::string_view>()(s);
    }
  };

  std::vector<Output> outputs_;
  std::vector<std::string> csv_names_;
  std::unordered_map<std::string, int, NameHash, std::equal_to<>> csv_index_;
  bool has_header_ = false;
  char quote_ = '"';
  std::vector<std::string> missing_;
  size_t max_missing_size_ = 0;  // longest of missing_
  LabelSpec label_;
};

}  // namespace dtf
