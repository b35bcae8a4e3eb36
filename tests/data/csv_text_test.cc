#include "lib/data/csv_text.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/data/csv_sniff.h"
#include "tests/testing/temp_dir.h"

namespace dtf {
namespace {

using namespace std::string_literals;
using ::testing::HasSubstr;

constexpr size_t kNone = std::string_view::npos;

// The first record of `text`, parsed with the default options.
struct OneRow {
  CsvChunk chunk;
  CsvRow row;
  explicit OneRow(std::string text, int64_t line = 1) {
    chunk.data = std::move(text);
    chunk.source = "in.csv";
    chunk.first_line = line;
    CsvChunkParser parser(chunk, CsvOptions{});
    auto got = parser.Next(&row);
    EXPECT_TRUE(got.ok() && *got) << got.status();
  }
};

TEST(CsvText, FindNonTextAcceptsUtf8AndFindsTheFirstBadByte) {
  EXPECT_EQ(FindNonText("plain ascii, long enough for words", false), kNone);
  EXPECT_EQ(FindNonText("caf\xC3\xA9 \xE6\x97\xA5 \xF0\x9F\x98\x80", false),
            kNone);
  EXPECT_EQ(FindNonText("caf\xE9", false), 3u);           // Latin-1
  EXPECT_EQ(FindNonText("abcdefghij\xC3", false), 10u);   // cut short
  EXPECT_EQ(FindNonText("\xC0\xAF", false), 0u);          // overlong
  EXPECT_EQ(FindNonText("\xE0\x80\xAF", false), 0u);      // overlong
  EXPECT_EQ(FindNonText("x\xED\xA0\x80", false), 1u);     // surrogate
  EXPECT_EQ(FindNonText("\xF4\x90\x80\x80", false), 0u);  // > U+10FFFF
  EXPECT_EQ(FindNonText("abcdefghijk\0z"s, false), 11u);  // NUL
  EXPECT_EQ(FindNonText("tab\there", false), kNone);
  EXPECT_EQ(FindNonText("tab\there", true), 3u);
  EXPECT_EQ(FindNonText("del\x7F", true), 3u);
}

TEST(CsvText, BinaryHeadIsRefusedWithThePlaceOfItsNul) {
  EXPECT_TRUE(CheckLooksLikeText("f.csv", "a,b\n1,2\n").ok());
  EXPECT_TRUE(CheckLooksLikeText("f.csv", "").ok());
  // Latin-1 text is text; its cells are judged one by one.
  EXPECT_TRUE(CheckLooksLikeText("f.csv", "name\ncaf\xE9\n").ok());
  Status st = CheckLooksLikeText("f.csv", "a,b\n1,2\nxy,\0\n"s);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(),
            "f.csv: looks like a binary file, not CSV (NUL byte at line 3, "
            "column 4)");
  st = CheckLooksLikeText("f.csv", "\x01\x02\x03,a\nb\x04\x05\x06\n");
  EXPECT_THAT(std::string(st.message()),
              HasSubstr("f.csv: looks like a binary file, not CSV (6 of its "
                        "first 11 bytes are control characters)"));
  st = CheckLooksLikeText("f.csv",
                          "\xFF\xFE"
                          "a\0,\0b\0"s);
  EXPECT_THAT(std::string(st.message()), HasSubstr("looks like UTF-16 text"));
  // Only the head counts: a NUL past it is for the cell checks.
  std::string late(kTextSniffBytes, 'x');
  late += '\0';
  EXPECT_TRUE(CheckLooksLikeText("f.csv", late).ok());
}

TEST(CsvText, BytePositionCountsQuotesAndLineBreaks) {
  OneRow r("ab,\"x\"\"y\nzz\xE9\",c\n", 5);
  ASSERT_EQ(r.row.fields.size(), 3u);
  ASSERT_EQ(r.row.fields[1], "x\"y\nzz\xE9");
  EXPECT_EQ(FieldBytePosition(r.row, 0, 1, '"'), std::make_pair(5L, 2));
  EXPECT_EQ(FieldBytePosition(r.row, 1, 0, '"'), std::make_pair(5L, 5));
  EXPECT_EQ(FieldBytePosition(r.row, 1, 2, '"'), std::make_pair(5L, 8));
  EXPECT_EQ(FieldBytePosition(r.row, 1, 6, '"'), std::make_pair(6L, 3));
}

TEST(CsvText, HeaderNamesMustBeUtf8Text) {
  EXPECT_TRUE(CheckHeaderText("in.csv", OneRow("a,\xC3\xA9t\xC3\xA9\n").row,
                              CsvOptions{})
                  .ok());
  Status st =
      CheckHeaderText("in.csv", OneRow("id,na\xFFme,x\n").row, CsvOptions{});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()),
              HasSubstr("in.csv:1:6: column name \"na\\xffme\" is not UTF-8 "
                        "text (byte 0xFF, not UTF-8)"));
  st = CheckHeaderText("in.csv", OneRow("id,\"a\x01\"\n").row, CsvOptions{});
  EXPECT_THAT(std::string(st.message()),
              HasSubstr("in.csv:1:6: column name \"a\\x01\" is not UTF-8 "
                        "text (control character 0x01)"));
}

TEST(CsvText, TextCellsMustBeUtf8WithoutNul) {
  OneRow r("1,caf\xE9,\"a\0b\"\n"s, 9);
  EXPECT_TRUE(CheckTextCell("in.csv", r.row, 0, '"', "n").ok());
  Status st = CheckTextCell("in.csv", r.row, 1, '"', "name");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()),
              HasSubstr("in.csv:9:6: column \"name\": the cell \"caf\\xe9\" "
                        "is not UTF-8 text (byte 0xE9, not UTF-8); dtf reads "
                        "CSV files as UTF-8"));
  st = CheckTextCell("in.csv", r.row, 2, '"', "blob");
  EXPECT_THAT(
      std::string(st.message()),
      HasSubstr("in.csv:9:10: column \"blob\": the cell \"a\\x00\\x62\" "
                "is not UTF-8 text (a NUL byte); is this a binary "
                "file?"));
}

TEST(CsvText, FieldCountErrorsNameTheRowsOwnPlace) {
  OneRow r("1,2,3,4,5\n", 17);
  EXPECT_TRUE(CheckFieldCount("d.csv", r.row, 5, true).ok());
  EXPECT_EQ(CheckFieldCount("d.csv", r.row, 4, true).message(),
            "d.csv:17:9: row has 5 fields, the header has 4");
  EXPECT_EQ(CheckFieldCount("d.csv", r.row, 6, true).message(),
            "d.csv:17: row has 5 fields, the header has 6");
  EXPECT_EQ(CheckFieldCount("d.csv", r.row, 3, false).message(),
            "d.csv:17:7: row has 5 fields, the schema has 3 columns");
  // The extra field's own line when a quoted line break comes before it.
  OneRow q("1,\"a\nb\",3\n", 4);
  EXPECT_EQ(CheckFieldCount("d.csv", q.row, 2, true).message(),
            "d.csv:5:4: row has 3 fields, the header has 2");
}

TEST(CsvText, EveryReaderRefusesABinaryFile) {
  testing::TempDir dir("dtf_csv_text_test");
  const std::string path = dir.Join("data.csv");
  testing::WriteFile(path,
                     "\x7F"
                     "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0"s);
  const std::string expected =
      path +
      ": looks like a binary file, not CSV (NUL byte at line 1, column 8)";
  auto rows = ReadCsvFile(path, CsvOptions{});
  EXPECT_EQ(rows.status().message(), expected);
  auto header = ReadCsvHeader(path, CsvOptions{});
  EXPECT_EQ(header.status().message(), expected);
  auto delimiter = SniffDelimiter(path);
  EXPECT_EQ(delimiter.status().message(), expected);
}

TEST(CsvText, ReadCsvHeaderRefusesANameThatIsNoText) {
  testing::TempDir dir("dtf_csv_text_test");
  const std::string path = dir.Join("data.csv");
  testing::WriteFile(path, "a,b\xC3\n1,2\n");
  auto header = ReadCsvHeader(path, CsvOptions{});
  EXPECT_THAT(std::string(header.status().message()),
              HasSubstr(path + ":1:4: column name \"b\\xc3\""));
}

}  // namespace
}  // namespace dtf
