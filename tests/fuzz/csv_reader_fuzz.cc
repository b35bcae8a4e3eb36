// libFuzzer target for CsvChunker and CsvChunkParser. The first input byte
// picks the options and a chunk size of 1..16 bytes; the rest is the CSV.
// Aborts when the rows (or the error) depend on the chunk size, when a chunk's
// counts disagree with what its parser sees, when a field views memory outside
// its chunk or row, or when quote-free input parses differently from a plain
// split on lines and delimiters.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/file.h"
#include "lib/data/csv_reader.h"
#include "lib/data/csv_text.h"

namespace {

using dtf::CsvChunk;
using dtf::CsvChunker;
using dtf::CsvChunkParser;
using dtf::CsvOptions;
using dtf::CsvRow;

void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "csv_reader_fuzz: %s\n", what);
  std::abort();
}

struct Row {
  std::vector<std::string> fields;
  std::vector<int32_t> columns;
  std::vector<bool> quoted;
  int64_t line;
  bool operator==(const Row&) const = default;
};

struct Result {
  std::vector<Row> rows;
  dtf::Status status;
};

bool Inside(std::string_view field, const std::string& buffer) {
  return field.empty() ||
         (field.data() >= buffer.data() &&
          field.data() + field.size() <= buffer.data() + buffer.size());
}

Result ParseAll(const std::string& input, const CsvOptions& options,
                size_t chunk_bytes) {
  CsvChunker chunker(dtf::NewStringSequentialFile(input, "fuzz.csv"), options,
                     chunk_bytes);
  Result result;
  CsvChunk chunk;
  CsvRow row;
  int64_t next_line = 1;
  int64_t next_record = 0;
  uint64_t offset = 0;
  for (;;) {
    dtf::StatusOr<bool> more = chunker.Next(&chunk);
    if (!more.ok()) {
      result.status = more.status();
      return result;
    }
    if (!*more) break;
    Check(chunk.first_line == next_line, "first_line skips");
    Check(chunk.first_record == next_record, "first_record skips");
    Check(chunk.end_offset > offset && chunk.end_offset <= input.size(),
          "end_offset out of order");
    offset = chunk.end_offset;
    for (char c : chunk.data) next_line += c == '\n';
    next_record += chunk.records;
    CsvChunkParser parser(chunk, options);
    int64_t records = 0;
    for (;;) {
      dtf::StatusOr<bool> got = parser.Next(&row);
      if (!got.ok()) {
        result.status = got.status();
        return result;
      }
      if (!*got) break;
      ++records;
      Check(row.fields.size() == row.columns.size() &&
                row.fields.size() == row.quoted.size() && !row.fields.empty(),
            "row vectors differ in size");
      Check(row.line >= chunk.first_line && row.line < next_line + 1,
            "row line outside its chunk");
      Row copy{{}, row.columns, row.quoted, row.line};
      for (size_t i = 0; i < row.fields.size(); ++i) {
        Check(Inside(row.fields[i], chunk.data) ||
                  Inside(row.fields[i], row.storage),
              "field views memory outside its chunk and row");
        Check(row.columns[i] >= 1, "column below 1");
        copy.fields.emplace_back(row.fields[i]);
      }
      result.rows.push_back(std::move(copy));
    }
    Check(records == chunk.records, "chunk.records differs from rows parsed");
  }
  Check(offset == input.size() || result.rows.empty(),
        "end_offset short of the input");
  return result;
}

// Lines split on '\n' and the delimiter, blank lines skipped: what input
// without quotes or carriage returns must give.
std::vector<std::vector<std::string>> PlainSplit(std::string_view input,
                                                 const CsvOptions& options) {
  if (input.substr(0, 3) == "\xEF\xBB\xBF") input.remove_prefix(3);
  std::vector<std::vector<std::string>> rows;
  auto trim = [&](std::string_view s) {
    auto space = [&](char c) {
      return (c == ' ' || c == '\t') && c != options.delimiter;
    };
    while (options.trim_spaces && !s.empty() && space(s.front())) {
      s.remove_prefix(1);
    }
    while (options.trim_spaces && !s.empty() && space(s.back())) {
      s.remove_suffix(1);
    }
    return std::string(s);
  };
  while (!input.empty()) {
    const size_t nl = input.find('\n');
    const std::string_view line = input.substr(0, nl);
    input.remove_prefix(nl == std::string_view::npos ? input.size() : nl + 1);
    if (line.empty()) continue;
    std::vector<std::string>& fields = rows.emplace_back();
    size_t start = 0;
    for (size_t d;
         (d = line.find(options.delimiter, start)) != std::string_view::npos;
         start = d + 1) {
      fields.push_back(trim(line.substr(start, d - start)));
    }
    fields.push_back(trim(line.substr(start)));
  }
  return rows;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static constexpr char kDelimiters[] = {',', ';', '\t', ' '};
  const uint8_t control = data[0];
  CsvOptions options;
  options.delimiter = kDelimiters[(control >> 4) & 3];
  options.quote = (control & 0x40) != 0 ? '\'' : '"';
  options.trim_spaces = (control & 0x80) != 0;
  const size_t chunk_bytes = 1 + (control & 0x0f);
  const std::string input(reinterpret_cast<const char*>(data) + 1, size - 1);

  const Result small = ParseAll(input, options, chunk_bytes);
  const Result whole = ParseAll(input, options, input.size() + 1);
  if (small.status.ok() && whole.status.ok()) {
    Check(small.rows == whole.rows, "rows depend on the chunk size");
  } else {
    Check(small.status == whole.status, "error depends on the chunk size");
    Check(whole.rows.size() <= small.rows.size(), "rows lost before error");
    for (size_t i = 0; i < whole.rows.size(); ++i) {
      Check(whole.rows[i] == small.rows[i], "rows before error differ");
    }
  }
  // Input refused as binary (csv_text.h) fails whatever it holds; the rest
  // without quotes or carriage returns parses as a plain split.
  std::string_view text = input;
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  const dtf::Status binary = dtf::CheckLooksLikeText("fuzz.csv", text);
  if (!binary.ok()) Check(whole.status == binary, "binary verdict differs");
  if (binary.ok() && input.find(options.quote) == std::string::npos &&
      input.find('\r') == std::string::npos) {
    Check(whole.status.ok(), "quote-free input failed");
    const auto plain = PlainSplit(input, options);
    Check(plain.size() == whole.rows.size(), "row count differs from split");
    for (size_t i = 0; i < plain.size(); ++i) {
      Check(plain[i] == whole.rows[i].fields, "fields differ from split");
    }
  }
  return 0;
}
