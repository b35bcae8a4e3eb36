#include "lib/data/csv_reader.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/file.h"
#include "tests/testing/paths.h"

namespace dtf {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Everything a CsvChunker + CsvChunkParser pass yields for one input.
struct Parsed {
  std::vector<std::vector<std::string>> rows;
  std::vector<int64_t> lines;
  std::vector<std::vector<int32_t>> columns;
  std::vector<std::vector<bool>> quoted;
  Status status;
  int chunks = 0;

  bool operator==(const Parsed& o) const {
    return rows == o.rows && lines == o.lines && columns == o.columns &&
           quoted == o.quoted && status == o.status;
  }
};

// Parses `input` in chunks of about `chunk_bytes`, checking the chunks'
// bookkeeping (lines, records, offsets) against what the parser sees.
Parsed Parse(const std::string& input, const CsvOptions& options = {},
             size_t chunk_bytes = 1 << 20) {
  CsvChunker chunker(NewStringSequentialFile(input, "test.csv"), options,
                     chunk_bytes);
  Parsed out;
  CsvChunk chunk;
  CsvRow row;
  int64_t next_line = 1;
  int64_t next_record = 0;
  uint64_t end_offset = 0;
  for (;;) {
    StatusOr<bool> more = chunker.Next(&chunk);
    if (!more.ok()) {
      out.status = more.status();
      return out;
    }
    if (!*more) break;
    ++out.chunks;
    EXPECT_EQ(chunk.source, "test.csv");
    EXPECT_EQ(chunk.first_line, next_line);
    EXPECT_EQ(chunk.first_record, next_record);
    EXPECT_GT(chunk.end_offset, end_offset);
    end_offset = chunk.end_offset;
    next_line += std::count(chunk.data.begin(), chunk.data.end(), '\n');
    next_record += chunk.records;
    CsvChunkParser parser(chunk, options);
    int64_t rows = 0;
    for (;;) {
      StatusOr<bool> got = parser.Next(&row);
      if (!got.ok()) {
        out.status = got.status();
        return out;
      }
      if (!*got) break;
      ++rows;
      EXPECT_EQ(row.fields.size(), row.columns.size());
      EXPECT_EQ(row.fields.size(), row.quoted.size());
      out.rows.emplace_back(row.fields.begin(), row.fields.end());
      out.lines.push_back(row.line);
      out.columns.push_back(row.columns);
      out.quoted.push_back(row.quoted);
    }
    EXPECT_EQ(rows, chunk.records);
  }
  if (out.chunks > 0) {
    EXPECT_EQ(end_offset, input.size());
  }
  return out;
}

using Rows = std::vector<std::vector<std::string>>;

TEST(CsvReader, SimpleRows) {
  const Parsed p = Parse("a,b,c\n1,2,3\n");
  ASSERT_TRUE(p.status.ok()) << p.status;
  EXPECT_EQ(p.rows, (Rows{{"a", "b", "c"}, {"1", "2", "3"}}));
  EXPECT_THAT(p.lines, ElementsAre(1, 2));
  EXPECT_THAT(p.columns[0], ElementsAre(1, 3, 5));
}

TEST(CsvReader, QuotedFieldsWithDelimitersAndEscapes) {
  const Parsed p = Parse("\"a,b\",\"say \"\"hi\"\"\",c,\"\"\n");
  ASSERT_TRUE(p.status.ok()) << p.status;
  EXPECT_EQ(p.rows, (Rows{{"a,b", "say \"hi\"", "c", ""}}));
  EXPECT_THAT(p.quoted[0], ElementsAre(true, true, false, true));
  EXPECT_THAT(p.columns[0], ElementsAre(1, 7, 20, 22));
}

TEST(CsvReader, QuotedFieldWithNewline) {
  const Parsed p = Parse("x,\"line1\nline2\",y\nz,\"a\n\nb\"\nlast,1\n");
  ASSERT_TRUE(p.status.ok()) << p.status;
  EXPECT_EQ(p.rows,
            (Rows{{"x", "line1\nline2", "y"}, {"z", "a\n\nb"}, {"last", "1"}}));
  EXPECT_THAT(p.lines, ElementsAre(1, 3, 6));
  // Columns count from the start of the physical line the field starts on.
  EXPECT_THAT(p.columns[0], ElementsAre(1, 3, 8));
}

TEST(CsvReader, CrLfLineEnds) {
  const Parsed p = Parse("a,b\r\n\"c\r\nd\",\"e\rf\"\r\ng,\r\n");
  ASSERT_TRUE(p.status.ok()) << p.status;
  EXPECT_EQ(p.rows, (Rows{{"a", "b"}, {"c\r\nd", "e\rf"}, {"g", ""}}));
  EXPECT_THAT(p.lines, ElementsAre(1, 2, 4));
}

TEST(CsvReader, LineBreaksInsideQuotesAreKeptByteForByte) {
  // As RFC 4180 and Python's csv module read them: CR LF, LF, a lone CR and
  // CR CR LF inside quotes are the field's bytes, whatever the line ends
  // outside quotes and wherever the chunks end.
  const std::string input =
      "\"a\r\nb\",\"c\nd\"\r\n\"e\rf\",\"g\r\r\nh\"\n\"\r\n\","
      "\"\"\"\r\n\"\"\"\r\n";
  const Rows want = {
      {"a\r\nb", "c\nd"}, {"e\rf", "g\r\r\nh"}, {"\r\n", "\"\r\n\""}};
  for (const bool trim : {true, false}) {
    CsvOptions options;
    options.trim_spaces = trim;
    for (size_t chunk_bytes : {1, 2, 3, 5, 1 << 20}) {
      const Parsed p = Parse(input, options, chunk_bytes);
      ASSERT_TRUE(p.status.ok()) << p.status;
      EXPECT_EQ(p.rows, want) << "chunks of " << chunk_bytes;
      EXPECT_THAT(p.lines, ElementsAre(1, 4, 6));
    }
  }
}

TEST(CsvReader, FieldLinesFollowQuotedLineBreaks) {
  CsvChunk chunk;
  chunk.data = "a,\"b\nc\",d,\"e\r\n\r\nf\",g\nh,i\n";
  chunk.source = "t.csv";
  chunk.first_line = 10;
  CsvChunkParser parser(chunk, CsvOptions{});
  CsvRow row;
  ASSERT_TRUE(*parser.Next(&row));
  EXPECT_EQ(row.line, 10);
  EXPECT_THAT(row.field_lines, ElementsAre(10, 10, 11, 11, 13));
  EXPECT_THAT(row.columns, ElementsAre(1, 3, 4, 6, 4));
  EXPECT_EQ(row.FieldLine(4), 13);
  ASSERT_TRUE(*parser.Next(&row));
  EXPECT_EQ(row.line, 14);
  EXPECT_TRUE(row.field_lines.empty());
  EXPECT_EQ(row.FieldLine(1), 14);
}

TEST(CsvReader, LoneCarriageReturnOutsideQuotesIsData) {
  const Parsed p = Parse("a\rb,c\n");
  ASSERT_TRUE(p.status.ok()) << p.status;
  EXPECT_EQ(p.rows, (Rows{{"a\rb", "c"}}));
}

TEST(CsvReader, ByteOrderMarkIsStrippedAtStartOnly) {
  for (size_t chunk_bytes : {1, 2, 3, 1 << 20}) {
    const Parsed p =
        Parse("\xEF\xBB\xBFid,name\n\xEF\xBB\xBFx,y\n", {}, chunk_bytes);
    ASSERT_TRUE(p.status.ok()) << p.status;
    EXPECT_EQ(p.rows, (Rows{{"id", "name"}, {"\xEF\xBB\xBFx", "y"}}));
    EXPECT_THAT(p.columns[0], ElementsAre(1, 4));
  }
  EXPECT_EQ(Parse("\xEF\xBB\xBF").rows, Rows{});
  EXPECT_EQ(Parse("\xEF\xBB").rows, (Rows{{"\xEF\xBB"}}));
}

TEST(CsvReader, CustomDelimiters) {
  CsvOptions semicolon;
  semicolon.delimiter = ';';
  EXPECT_EQ(Parse("a;b,c;\"d;e\"\n", semicolon).rows,
            (Rows{{"a", "b,c", "d;e"}}));
  CsvOptions tab;
  tab.delimiter = '\t';
  // Trimming never eats the tab delimiter.
  EXPECT_EQ(Parse("a\t b \t\tc\n", tab).rows, (Rows{{"a", "b", "", "c"}}));
  const Parsed quoted = Parse("\"x\" \t \"y\"\n", tab);
  ASSERT_TRUE(quoted.status.ok()) << quoted.status;
  EXPECT_EQ(quoted.rows, (Rows{{"x", "y"}}));
}

TEST(CsvReader, SpacesAfterDelimitersAdultStyle) {
  const std::string line = "39, State-gov, 77516,  \"a, b\" , x  \n";
  const Parsed trimmed = Parse(line);
  ASSERT_TRUE(trimmed.status.ok()) << trimmed.status;
  EXPECT_EQ(trimmed.rows, (Rows{{"39", "State-gov", "77516", "a, b", "x"}}));
  EXPECT_THAT(trimmed.columns[0], ElementsAre(1, 5, 16, 24, 33));
  CsvOptions keep;
  keep.trim_spaces = false;
  EXPECT_EQ(Parse("39, State-gov , x\n", keep).rows,
            (Rows{{"39", " State-gov ", " x"}}));
  const Parsed error = Parse("a, \"b\"\n", keep);
  EXPECT_EQ(error.status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(error.status),
              HasSubstr("test.csv:1:4: unexpected quote in unquoted field"));
}

TEST(CsvReader, EmptyCellsAndTrailingEmptyField) {
  const Parsed p = Parse("a,,c\n,\na,b,\n\"\",\n");
  ASSERT_TRUE(p.status.ok()) << p.status;
  EXPECT_EQ(p.rows, (Rows{{"a", "", "c"}, {"", ""}, {"a", "b", ""}, {"", ""}}));
  EXPECT_THAT(p.quoted[3], ElementsAre(true, false));
  EXPECT_THAT(p.columns[2], ElementsAre(1, 3, 5));
}

TEST(CsvReader, BlankLinesAreSkippedAndCounted) {
  const Parsed p = Parse("\na,b\n\n\r\nc,d\n\n");
  ASSERT_TRUE(p.status.ok()) << p.status;
  EXPECT_EQ(p.rows, (Rows{{"a", "b"}, {"c", "d"}}));
  EXPECT_THAT(p.lines, ElementsAre(2, 5));
  // A line of spaces is a record with one empty field.
  EXPECT_EQ(Parse("  \n").rows, (Rows{{""}}));
  EXPECT_EQ(Parse("\n\n\r\n").rows, Rows{});
  EXPECT_EQ(Parse("").rows, Rows{});
}

TEST(CsvReader, NoFinalNewline) {
  EXPECT_EQ(Parse("a,b\nc,d").rows, (Rows{{"a", "b"}, {"c", "d"}}));
  EXPECT_EQ(Parse("a,b\r").rows, (Rows{{"a", "b"}}));
  EXPECT_EQ(Parse("a,\"b\"").rows, (Rows{{"a", "b"}}));
  EXPECT_EQ(Parse("a,\"b\"\r").rows, (Rows{{"a", "b"}}));
  EXPECT_EQ(Parse("a,").rows, (Rows{{"a", ""}}));
  EXPECT_EQ(Parse("x\n\r").rows, (Rows{{"x"}}));
}

TEST(CsvReader, ManyEscapedFieldsKeepValidViews) {
  std::string line;
  Rows expected(1);
  for (int i = 0; i < 200; ++i) {
    const std::string value = "v" + std::to_string(i) + "\"q\"";
    line += (i ? "," : "") + ("\"v" + std::to_string(i) + "\"\"q\"\"\"");
    expected[0].push_back(value);
  }
  const Parsed p = Parse(line + "\n" + line + "\n");
  ASSERT_TRUE(p.status.ok()) << p.status;
  expected.push_back(expected[0]);
  EXPECT_EQ(p.rows, expected);
}

TEST(CsvReader, UnterminatedQuoteNamesWhereItOpened) {
  for (size_t chunk_bytes : {1, 2, 5, 1 << 20}) {
    const Parsed p = Parse("a,b\nc,\"d\ne\n", {}, chunk_bytes);
    EXPECT_EQ(p.status.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(Message(p.status),
              "test.csv:2:3: unterminated quoted field (opened here)");
  }
}

TEST(CsvReader, StrayQuoteInUnquotedField) {
  for (size_t chunk_bytes : {1, 3, 1 << 20}) {
    Parsed p = Parse("x\nab,c\"d\n", {}, chunk_bytes);
    EXPECT_EQ(Message(p.status),
              "test.csv:2:5: unexpected quote in unquoted field");
    // Reported as a stray quote even though no closing quote follows.
    p = Parse("ab\"c,d\nxy\n", {}, chunk_bytes);
    EXPECT_EQ(Message(p.status),
              "test.csv:1:3: unexpected quote in unquoted field");
  }
}

TEST(CsvReader, CharactersAfterClosingQuote) {
  const Parsed p = Parse("ok\n\"ab\"c,d\n");
  EXPECT_EQ(p.status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(p.status),
            "test.csv:2:5: unexpected character after closing quote (opened "
            "at column 1)");
  EXPECT_EQ(Parse("\"a\"\rb\n").status.code(), StatusCode::kInvalidArgument);
}

TEST(CsvReader, InvalidOptions) {
  CsvOptions same;
  same.delimiter = '"';
  EXPECT_EQ(Parse("a\n", same).status.code(), StatusCode::kInvalidArgument);
  CsvOptions newline;
  newline.delimiter = '\n';
  EXPECT_EQ(Parse("a\n", newline).status.code(), StatusCode::kInvalidArgument);
}

TEST(CsvReader, TinyChunksMatchOneBigChunk) {
  const std::vector<std::string> inputs = {
      "a,b,c\n1,2,3\n",
      "\"a\nb\",c\r\n\"\"\"\",\"x\r\ny\"\r\n\r\nlast",
      "\xEF\xBB\xBF\"q\"\n\n\n\"r\",s\r",
      "\"a\"\"\nb\"\"\",\"\"\n,\n,,\n\r\n",
      "39, State-gov, 77516\n50, ?, 83311\n\n",
      "x\r\n\"y\r\",z\r\n\r\"w\"\n",
      "\"\",\"\"\n\"\"\"\"\"\"\n",
      "a,\"b\"c\nd\n",
      "1,2\n\"open\n3,4\n",
      "\r\r\n\r\n\r",
      "p ,  \"q\"  , r\n\t\"s\"\t\n",
  };
  for (const bool trim : {true, false}) {
    CsvOptions options;
    options.trim_spaces = trim;
    for (const std::string& input : inputs) {
      const Parsed whole = Parse(input, options);
      for (size_t chunk_bytes = 1; chunk_bytes <= 7; ++chunk_bytes) {
        const Parsed pieces = Parse(input, options, chunk_bytes);
        if (whole.status.ok()) {
          EXPECT_TRUE(pieces == whole)
              << "input " << testing::PrintToString(input) << " chunk "
              << chunk_bytes << ": " << pieces.status;
        } else {
          EXPECT_EQ(pieces.status, whole.status)
              << testing::PrintToString(input) << " chunk " << chunk_bytes;
        }
      }
    }
  }
}

// The binary-file check sees the same first bytes whatever the chunk
// size: its verdict, and its message, do not depend on it (found by
// csv_reader_fuzz: "1 of its first 3 bytes" with 1-byte chunks, "1 of its
// first 4 bytes" whole).
TEST(CsvReader, TheBinaryCheckDoesNotDependOnTheChunkSize) {
  for (const std::string& input :
       {std::string("\x01\n\n\n"), std::string("a,b\n1,2\n\x02\x03\n"),
        std::string(100, 'x') + std::string(1, '\0')}) {
    std::vector<std::string> errors;
    for (size_t chunk : {size_t(1), size_t(2), size_t(7), input.size() + 1}) {
      CsvChunker chunker(NewStringSequentialFile(input, "test.csv"),
                         CsvOptions{}, chunk);
      CsvChunk c;
      Status st;
      for (;;) {
        StatusOr<bool> more = chunker.Next(&c);
        if (!more.ok()) {
          st = more.status();
          break;
        }
        if (!*more) break;
      }
      errors.push_back(std::string(Message(st)));
    }
    for (const std::string& e : errors) EXPECT_EQ(e, errors.back()) << input;
    EXPECT_NE(errors.back().find("looks like a binary file"), std::string::npos)
        << errors.back();
  }
}

TEST(CsvReader, ChunksEndOnRecordBoundaries) {
  std::string input;
  for (int i = 0; i < 100; ++i) {
    input += std::to_string(i) + ",\"multi\nline " + std::to_string(i) + "\"\n";
  }
  const Parsed p = Parse(input, {}, 64);
  ASSERT_TRUE(p.status.ok()) << p.status;
  EXPECT_GT(p.chunks, 10);
  ASSERT_EQ(p.rows.size(), 100u);
  EXPECT_EQ(p.rows[99][1], "multi\nline 99");
  EXPECT_EQ(p.lines[99], 199);
}

TEST(CsvReader, TitanicTrain) {
  const std::string path =
      std::string(DTF_SHARED_DIR) + "/data/titanic/train.csv";
  StatusOr<std::vector<std::vector<std::string>>> rows =
      ReadCsvFile(path, CsvOptions());
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 892u);
  for (const auto& row : *rows) ASSERT_EQ(row.size(), 12u);
  EXPECT_EQ((*rows)[0][3], "Name");
  EXPECT_EQ((*rows)[1][3], "Braund, Mr. Owen Harris");
  EXPECT_EQ((*rows)[1][10], "");
  EXPECT_EQ((*rows)[23][3], "McGowan, Miss. Anna \"Annie\"");
  EXPECT_EQ((*rows)[891][0], "891");
  // Small chunks give the same rows.
  StatusOr<std::string> text = ReadFileToString(path);
  ASSERT_TRUE(text.ok());
  const Parsed p = Parse(*text, {}, 4096);
  ASSERT_TRUE(p.status.ok()) << p.status;
  EXPECT_GT(p.chunks, 10);
  EXPECT_EQ(p.rows, *rows);
}

TEST(CsvReader, AdultData) {
  const std::string path =
      std::string(DTF_SHARED_DIR) + "/data/adult/adult.data";
  StatusOr<std::string> text = ReadFileToString(path);
  ASSERT_TRUE(text.ok()) << text.status();
  const Parsed p = Parse(*text, {}, 64 << 10);
  ASSERT_TRUE(p.status.ok()) << p.status;
  ASSERT_EQ(p.rows.size(), 32561u);
  for (const auto& row : p.rows) ASSERT_EQ(row.size(), 15u);
  EXPECT_THAT(p.rows[0], ElementsAre("39", "State-gov", "77516", "Bachelors",
                                     "13", "Never-married", "Adm-clerical",
                                     "Not-in-family", "White", "Male", "2174",
                                     "0", "40", "United-States", "<=50K"));
  EXPECT_EQ(p.rows[32560][14], ">50K");
  EXPECT_EQ(p.lines[32560], 32561);
}

TEST(CsvReader, AdultTestLabelsKeepTheirDot) {
  StatusOr<std::vector<std::vector<std::string>>> rows = ReadCsvFile(
      std::string(DTF_SHARED_DIR) + "/data/adult/adult.test", CsvOptions());
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 16281u);
  EXPECT_EQ((*rows)[0][14], "<=50K.");
}

TEST(CsvReader, ReadCsvFileErrors) {
  StatusOr<std::vector<std::vector<std::string>>> missing =
      ReadCsvFile("/nonexistent/dir/x.csv", CsvOptions());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  const std::string path = testing::TempDir() + "/csv_reader_test_bad.csv";
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("a,b\n\"c,d\n", f);
  std::fclose(f);
  StatusOr<std::vector<std::vector<std::string>>> bad =
      ReadCsvFile(path, CsvOptions());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(bad.status()), HasSubstr("csv_reader_test_bad.csv:2:1: "
                                               "unterminated quoted field"));
}

}  // namespace
}  // namespace dtf
