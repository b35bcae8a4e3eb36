// The two types every CSV reader and checker shares: the dialect's options
// and one parsed record (fields, where each starts, which were quoted). The
// reader that fills them is lib/data/csv_reader.h; the text checks that read
// them are lib/data/csv_text.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dtf {

struct CsvOptions {
  // Field separator. Default: ','.
  char delimiter = ',';
  // Quote character. Default: '"'.
  char quote = '"';
  // Strip spaces and tabs (other than the delimiter) around unquoted fields,
  // before an opening quote and after a closing quote. Default: true.
  bool trim_spaces = true;
};

// One parsed record. Fields view into the chunk's data, or into `storage`
// when unquoting changed them; valid until the next parse into this row and
// while the chunk lives.
struct CsvRow {
  std::vector<std::string_view> fields;
  // 1-based column (byte offset within the line + 1) where each field starts.
  std::vector<int32_t> columns;
  // 1-based physical line on which the record starts.
  int64_t line = 0;
  // 1-based physical line on which each field starts; empty when every
  // field starts on `line` (no quoted line break before the last one).
  std::vector<int64_t> field_lines;
  // True for each field that was quoted (a quoted empty field is a value, not
  // a missing cell).
  std::vector<bool> quoted;
  std::string storage;

  // The physical line on which field `i` starts (`columns[i]` counts from
  // the start of that line).
  int64_t FieldLine(size_t i) const {
    return field_lines.empty() ? line : field_lines[i];
  }
};

}  // namespace dtf
