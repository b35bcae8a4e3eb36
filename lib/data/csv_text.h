// What dtf requires of CSV bytes beyond the dialect. Header names become
// tf.train.Example feature names, proto3 `string` map keys that protobuf
// refuses unless they are UTF-8, and text cells (str columns) become
// bytes_list values, vocabularies and TOML; so both must be UTF-8 text. A
// file that opens with NUL or control bytes is no CSV at all (a binary file
// given by mistake) and is refused before any row is read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "lib/base/status.h"
#include "lib/data/csv_row.h"

namespace dtf {

// Bytes of a file's start that CheckLooksLikeText looks at.
inline constexpr size_t kTextSniffBytes = 64 << 10;

// Offset in `s` of the first byte that is not part of well-formed UTF-8
// (overlong forms, surrogates and code points past U+10FFFF are not), of
// the first NUL, and, with `controls`, of the first other control character
// (below 0x20, or 0x7F; tab included); npos when there is none.
size_t FindNonText(std::string_view s, bool controls);

// OK, or InvalidArgument "source: looks like a binary file, not CSV (NUL
// byte at line L, column C)" when `head`, the first bytes of a file (after
// a UTF-8 byte-order mark), holds a NUL byte or is more than 5% control
// characters other than line breaks and tabs; a UTF-16 byte-order mark is
// named as such ("looks like UTF-16 text, not UTF-8 CSV"). Only the first
// kTextSniffBytes of `head` are looked at.
Status CheckLooksLikeText(std::string_view source, std::string_view head);

// The physical line and 1-based column at which the file holds byte
// `offset` of field `i` of `row` (counting the doubled quote characters and
// line breaks of a quoted field). REQUIRES: i < row.fields.size().
std::pair<int64_t, int32_t> FieldBytePosition(const CsvRow& row, size_t i,
                                              size_t offset, char quote);

// OK when every field of `header` (a header record) is a valid feature
// name: UTF-8 without control characters. Else InvalidArgument
// "source:line:col: column name \"...\" is not UTF-8 text (byte 0xFF)",
// the place being that of the offending byte.
Status CheckHeaderText(std::string_view source, const CsvRow& header,
                       const CsvOptions& options);

// OK when `cell` (field `i` of `row`) is UTF-8 without NUL bytes. Else
// InvalidArgument "source:line:col: column \"name\": ..." at the offending
// byte. `column` names the column in the message.
Status CheckTextCell(std::string_view source, const CsvRow& row, size_t i,
                     char quote, std::string_view column);

// OK when `row` has `expected` fields. Else InvalidArgument
// "source:line:col: row has N fields, the header has M" at the first extra
// field, or "source:line: row has N fields, the header has M" with too few;
// without `header`, "... the schema has M columns".
Status CheckFieldCount(std::string_view source, const CsvRow& row,
                       size_t expected, bool header);

}  // namespace dtf
