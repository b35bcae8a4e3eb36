// Differential test: the CSV reader against Python's csv module on random
// RFC 4180 files written by tests/data/csv_cpython_cases.py. Every cell must
// match byte for byte, whatever the chunk size.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/data/csv_reader.h"
#include "tests/testing/paths.h"
#include "tests/testing/temp_dir.h"

namespace dtf {
namespace {

constexpr int kCases = 70;

using Rows = std::vector<std::vector<std::string>>;

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

bool Unhex(std::string_view hex, std::string* out) {
  out->clear();
  if (hex.size() % 2 != 0) return false;
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = HexDigit(hex[i]), lo = HexDigit(hex[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi * 16 + lo));
  }
  return true;
}

// Reads a .expected file: the delimiter, then one record per line.
bool ReadExpected(const std::string& path, char* delimiter, Rows* rows) {
  std::ifstream in(path, std::ios::binary);
  std::string line, cell;
  if (!std::getline(in, line) || !Unhex(line, &cell) || cell.size() != 1) {
    return false;
  }
  *delimiter = cell[0];
  while (std::getline(in, line)) {
    std::vector<std::string> row;
    size_t start = 0;
    for (;;) {
      const size_t comma = line.find(',', start);
      const std::string_view hex =
          std::string_view(line).substr(start, comma - start);
      if (!Unhex(hex, &cell)) return false;
      row.push_back(cell);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    rows->push_back(std::move(row));
  }
  return true;
}

// A cell as C source text, so CR, LF and tabs show.
std::string Show(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '\r') {
      out += "\\r";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// Every record of `path`, read in chunks of about `chunk_bytes`; the
// physical line each record starts on goes to `*lines`.
StatusOr<Rows> ReadAll(const std::string& path, const CsvOptions& options,
                       size_t chunk_bytes, std::vector<int64_t>* lines) {
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<SequentialFile> file,
                       OpenSequentialFile(path));
  CsvChunker chunker(std::move(file), options, chunk_bytes);
  Rows rows;
  CsvChunk chunk;
  CsvRow row;
  for (;;) {
    DTF_ASSIGN_OR_RETURN(const bool more_chunks, chunker.Next(&chunk));
    if (!more_chunks) return rows;
    CsvChunkParser parser(chunk, options);
    for (;;) {
      DTF_ASSIGN_OR_RETURN(const bool more_rows, parser.Next(&row));
      if (!more_rows) break;
      rows.emplace_back(row.fields.begin(), row.fields.end());
      lines->push_back(row.line);
    }
  }
}

TEST(CsvReaderCpython, EveryCellMatchesPythonsCsvModule) {
  testing::TempDir dir("dtf_csv_cpython");
  ASSERT_FALSE(dir.path().empty());
  const std::string command =
      StrCat("python3 '", DTF_SOURCE_DIR, "/tests/data/csv_cpython_cases.py' '",
             dir.path(), "' ", kCases);
  ASSERT_EQ(std::system(command.c_str()), 0)
      << command << " failed: the test needs python3 on PATH";
  int64_t records = 0;
  for (int i = 0; i < kCases; ++i) {
    const std::string base = dir.Join(fmt::format("case_{:03d}", i));
    const std::string csv = base + ".csv";
    CsvOptions options;
    options.trim_spaces = false;
    Rows want;
    ASSERT_TRUE(ReadExpected(base + ".expected", &options.delimiter, &want))
        << base << ".expected is malformed";
    records += static_cast<int64_t>(want.size());
    for (const size_t chunk_bytes : {size_t{4} << 20, size_t{97}, size_t{5}}) {
      std::vector<int64_t> lines;
      StatusOr<Rows> got = ReadAll(csv, options, chunk_bytes, &lines);
      ASSERT_TRUE(got.ok()) << csv << " (chunks of " << chunk_bytes
                            << " bytes): " << got.status();
      int mismatches = 0;
      for (size_t r = 0; r < want.size() && r < got->size(); ++r) {
        const std::vector<std::string>& w = want[r];
        const std::vector<std::string>& g = (*got)[r];
        if (g.size() != w.size()) {
          ADD_FAILURE() << csv << ":" << r + 1 << " (line " << lines[r]
                        << ", chunks of " << chunk_bytes << " bytes): dtf read "
                        << g.size() << " fields, Python's csv " << w.size();
          ++mismatches;
        }
        for (size_t c = 0; c < w.size() && c < g.size(); ++c) {
          if (g[c] == w[c]) continue;
          ADD_FAILURE() << csv << ":" << r + 1 << ":" << c + 1 << " (record "
                        << r + 1 << " from line " << lines[r] << ", column "
                        << c + 1 << ", chunks of " << chunk_bytes
                        << " bytes): dtf read " << Show(g[c])
                        << ", Python's csv read " << Show(w[c]);
          ++mismatches;
        }
        if (mismatches >= 10) break;
      }
      EXPECT_EQ(got->size(), want.size())
          << csv << " (chunks of " << chunk_bytes
          << " bytes): records read by dtf and by Python's csv";
      if (mismatches > 0) break;  // one chunk size tells it
    }
  }
  EXPECT_GT(records, 2000);
}

}  // namespace
}  // namespace dtf
