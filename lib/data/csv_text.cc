#include "lib/data/csv_text.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"
#include "lib/base/strings.h"
#include "lib/base/utf8.h"

namespace dtf {
namespace {

inline bool IsControl(unsigned char c) { return c < 0x20 || c == 0x7F; }

// The first bytes of `s`, escaped so that any byte reads in a message.
std::string Shown(std::string_view s) {
  constexpr size_t kMax = 100;
  const std::string_view head = s.substr(0, kMax);
  return StrCat("\"",
                absl::CHexEscape(absl::string_view(head.data(), head.size())),
                s.size() > kMax ? "\"..." : "\"");
}

std::string WhatIsWrong(unsigned char c) {
  if (c == 0) return "a NUL byte";
  if (IsControl(c)) return absl::StrFormat("control character 0x%02X", c);
  return absl::StrFormat("byte 0x%02X, not UTF-8", c);
}

}  // namespace

size_t FindNonText(std::string_view s, bool controls) {
  return FindNonUtf8(s, controls ? Utf8Stop::kControls : Utf8Stop::kNul);
}

Status CheckLooksLikeText(std::string_view source, std::string_view head) {
  head = head.substr(0, kTextSniffBytes);
  if (head.starts_with("\xFF\xFE") || head.starts_with("\xFE\xFF")) {
    return InvalidArgumentError(StrCat(
        source,
        ": looks like UTF-16 text, not UTF-8 CSV (it starts with a UTF-16 "
        "byte-order mark); convert it, e.g. iconv -f UTF-16 -t UTF-8"));
  }
  const size_t nul = head.find('\0');
  if (nul != std::string_view::npos) {
    const std::string_view before = head.substr(0, nul);
    const size_t line_start = before.rfind('\n');
    const int64_t line = 1 + static_cast<int64_t>(std::count(
                                 before.begin(), before.end(), '\n'));
    const size_t column =
        line_start == std::string_view::npos ? nul + 1 : nul - line_start;
    return InvalidArgumentError(
        StrCat(source, ": looks like a binary file, not CSV (NUL byte at line ",
               line, ", column ", column, ")"));
  }
  size_t controls = 0;
  for (char ch : head) {
    const auto c = static_cast<unsigned char>(ch);
    if (IsControl(c) && c != '\n' && c != '\r' && c != '\t') ++controls;
  }
  if (!head.empty() && controls * 20 > head.size()) {
    return InvalidArgumentError(absl::StrFormat(
        "%s: looks like a binary file, not CSV (%d of its first %d bytes are "
        "control characters)",
        source, controls, head.size()));
  }
  return OkStatus();
}

std::pair<int64_t, int32_t> FieldBytePosition(const CsvRow& row, size_t i,
                                              size_t offset, char quote) {
  int64_t line = row.FieldLine(i);
  int64_t column = row.columns[i];
  if (!row.quoted[i]) return {line, static_cast<int32_t>(column + offset)};
  ++column;  // the opening quote
  const std::string_view field = row.fields[i];
  for (size_t k = 0; k < offset && k < field.size(); ++k) {
    if (field[k] == '\n') {
      ++line;
      column = 1;
    } else {
      column += field[k] == quote ? 2 : 1;
    }
  }
  return {line, static_cast<int32_t>(std::min<int64_t>(column, INT32_MAX))};
}

Status CheckHeaderText(std::string_view source, const CsvRow& header,
                       const CsvOptions& options) {
  for (size_t i = 0; i < header.fields.size(); ++i) {
    const std::string_view name = header.fields[i];
    const size_t bad = FindNonText(name, /*controls=*/true);
    if (bad == std::string_view::npos) continue;
    const auto [line, column] =
        FieldBytePosition(header, i, bad, options.quote);
    return InvalidArgumentError(
        StrCat(source, ":", line, ":", column, ": column name ", Shown(name),
               " is not UTF-8 text (", WhatIsWrong(name[bad]),
               "): header names become feature names, which must be UTF-8 "
               "text; is this a CSV file?"));
  }
  return OkStatus();
}

Status CheckTextCell(std::string_view source, const CsvRow& row, size_t i,
                     char quote, std::string_view column_name) {
  const std::string_view cell = row.fields[i];
  const size_t bad = FindNonText(cell, /*controls=*/false);
  if (bad == std::string_view::npos) return OkStatus();
  const auto [line, column] = FieldBytePosition(row, i, bad, quote);
  const auto c = static_cast<unsigned char>(cell[bad]);
  return InvalidArgumentError(StrCat(
      source, ":", line, ":", column, ": column ", QuoteForMessage(column_name),
      ": the cell ", Shown(cell), " is not UTF-8 text (", WhatIsWrong(c), "); ",
      c == 0 ? "is this a binary file?"
             : "dtf reads CSV files as UTF-8: convert the file, e.g. iconv "
               "-f LATIN1 -t UTF-8"));
}

Status CheckFieldCount(std::string_view source, const CsvRow& row,
                       size_t expected, bool header) {
  const size_t n = row.fields.size();
  if (n == expected) return OkStatus();
  const std::string has = header
                              ? StrCat("the header has ", expected)
                              : StrCat("the schema has ", expected, " columns");
  if (n < expected) {
    return InvalidArgumentError(
        StrCat(source, ":", row.line, ": row has ", n, " fields, ", has));
  }
  return InvalidArgumentError(StrCat(source, ":", row.FieldLine(expected), ":",
                                     row.columns[expected], ": row has ", n,
                                     " fields, ", has));
}

}  // namespace dtf
