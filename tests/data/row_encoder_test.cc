#include "lib/data/row_encoder.h"

#include <string>
#include <tuple>
#include <vector>

#include "fmt/format.h"
#include "gmock/gmock.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "gtest/gtest.h"
#include "proto/example.pb.h"
#include "tests/data/schema_testing.h"

namespace dtf {
namespace {

using ::testing::HasSubstr;

// A one-record chunk parsed into a row.
struct ParsedRow {
  CsvChunk chunk;
  CsvRow row;
};

std::unique_ptr<ParsedRow> Parse(const std::string& line, int64_t lineno = 7) {
  auto p = std::make_unique<ParsedRow>();
  p->chunk.data = line + "\n";
  p->chunk.source = "in.csv";
  p->chunk.first_line = lineno;
  p->chunk.records = 1;
  CsvChunkParser parser(p->chunk, CsvOptions{});
  auto got = parser.Next(&p->row);
  EXPECT_TRUE(got.ok() && *got);
  return p;
}

std::string Deterministic(const tensorflow::Example& e) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  e.SerializeToCodedStream(&coded);
  coded.Trim();
  return out;
}

Schema TitanicLike() {
  Schema s;
  s.columns = {
      {"id", ValueType::kInt, std::nullopt, false, true},
      {"survived", ValueType::kInt, Value(int64_t{-1}), false, false},
      {"name", ValueType::kString, std::nullopt, false, false},
      {"age", ValueType::kFloat, Value(-1.0), false, false},
      {"cabin", ValueType::kString, std::nullopt, false, false},
      {"big", ValueType::kInt, std::nullopt, false, false},
  };
  s.missing_values = {"", "?"};
  return s;
}

TEST(RowEncoder, MatchesProtobufDeterministicSerialization) {
  auto enc = RowEncoder::Create(TitanicLike(), {}, "in.csv");
  ASSERT_TRUE(enc.ok()) << enc.status();
  auto p = Parse("12,1,\"Braund, Mr. Owen\",22.5,?,-9223372036854775808");
  RowEncoder::Scratch scratch;
  std::string got;
  ASSERT_TRUE(enc->Encode(p->row, "in.csv", &scratch, &got).ok());

  tensorflow::Example want;
  auto& f = *want.mutable_features()->mutable_feature();
  f["survived"].mutable_int64_list()->add_value(1);
  f["name"].mutable_bytes_list()->add_value("Braund, Mr. Owen");
  f["age"].mutable_float_list()->add_value(22.5f);
  f["big"].mutable_int64_list()->add_value(INT64_MIN);
  // id is skipped; cabin is missing with no default, so left out.
  EXPECT_EQ(got, Deterministic(want));
}

TEST(RowEncoder, DefaultsFillMissingCells) {
  auto enc = RowEncoder::Create(TitanicLike(), {}, "in.csv");
  ASSERT_TRUE(enc.ok());
  auto p = Parse("1,,x,,,5");
  RowEncoder::Scratch scratch;
  std::string got;
  ASSERT_TRUE(enc->Encode(p->row, "in.csv", &scratch, &got).ok());
  tensorflow::Example e;
  ASSERT_TRUE(e.ParseFromString(got));
  EXPECT_EQ(e.features().feature().at("survived").int64_list().value(0), -1);
  EXPECT_EQ(e.features().feature().at("age").float_list().value(0), -1.0f);
  EXPECT_EQ(e.features().feature().count("cabin"), 0u);
}

TEST(RowEncoder, HeaderMapsColumnsByName) {
  Schema s;
  s.columns = Cols({{"b", ValueType::kInt}, {"a", ValueType::kString}}).columns;
  auto enc = RowEncoder::Create(s, {"a", "x", "b"}, "in.csv");
  ASSERT_TRUE(enc.ok()) << enc.status();
  EXPECT_EQ(enc->CsvIndex("b"), 2);
  auto p = Parse("hello,ignored,42");
  RowEncoder::Scratch scratch;
  std::string got;
  ASSERT_TRUE(enc->Encode(p->row, "in.csv", &scratch, &got).ok());
  tensorflow::Example e;
  ASSERT_TRUE(e.ParseFromString(got));
  EXPECT_EQ(e.features().feature_size(), 2);
  EXPECT_EQ(e.features().feature().at("b").int64_list().value(0), 42);
  EXPECT_EQ(e.features().feature().at("a").bytes_list().value(0), "hello");
}

TEST(RowEncoder, ColumnMissingFromHeaderIsAnError) {
  Schema s;
  s.columns = Cols({{"nope", ValueType::kInt}}).columns;
  auto enc = RowEncoder::Create(s, {"a", "b"}, "in.csv");
  ASSERT_FALSE(enc.ok());
  EXPECT_THAT(std::string(enc.status().message()), HasSubstr("\"nope\""));
}

TEST(RowEncoder, BadValueNamesLineColumnAndLeavesOutputAlone) {
  auto enc = RowEncoder::Create(TitanicLike(), {}, "in.csv");
  ASSERT_TRUE(enc.ok());
  auto p = Parse("1,1,x,abc,,5", 41);
  RowEncoder::Scratch scratch;
  std::string got = "keep";
  Status st = enc->Encode(p->row, "in.csv", &scratch, &got);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()),
              HasSubstr("in.csv:41:7: column \"age\": expected a float"));
  EXPECT_EQ(got, "keep");
}

TEST(RowEncoder, TooFewFields) {
  auto enc = RowEncoder::Create(TitanicLike(), {}, "in.csv");
  ASSERT_TRUE(enc.ok());
  auto p = Parse("1,2", 3);
  RowEncoder::Scratch scratch;
  std::string got;
  Status st = enc->Encode(p->row, "in.csv", &scratch, &got);
  EXPECT_THAT(
      std::string(st.message()),
      HasSubstr("in.csv:3: row has 2 fields, the schema has 6 columns"));
}

TEST(RowEncoder, LabelMapAndVectors) {
  Schema s;
  s.columns = Cols({{"p0", ValueType::kFloat},
                    {"p1", ValueType::kFloat},
                    {"p2", ValueType::kFloat},
                    {"income", ValueType::kString}})
                  .columns;
  s.vectors = {{"pixels", ValueType::kFloat, {"p0", "p1", "p2"}, Value(0.0)}};
  s.label = LabelSpec{"income", {{"<=50K", 0}, {">50K", 1}, {">50K.", 1}}};
  auto enc = RowEncoder::Create(s, {}, "in.csv");
  ASSERT_TRUE(enc.ok()) << enc.status();
  auto p = Parse("0.5,,2,>50K.");
  RowEncoder::Scratch scratch;
  std::string got;
  ASSERT_TRUE(enc->Encode(p->row, "in.csv", &scratch, &got).ok());
  tensorflow::Example want;
  auto& f = *want.mutable_features()->mutable_feature();
  f["income"].mutable_int64_list()->add_value(1);
  for (float v : {0.5f, 0.0f, 2.0f}) {
    f["pixels"].mutable_float_list()->add_value(v);
  }
  EXPECT_EQ(got, Deterministic(want));

  auto bad = Parse("1,2,3,maybe");
  Status st = enc->Encode(bad->row, "in.csv", &scratch, &got);
  EXPECT_THAT(std::string(st.message()), HasSubstr("\"maybe\""));
  EXPECT_THAT(std::string(st.message()), HasSubstr("schema.label.map"));
}

TEST(RowEncoder, QuotingMarksAValue) {
  Schema s = Cols({{"s", ValueType::kString},
                   {"t", ValueType::kString},
                   {"n", ValueType::kInt}});
  s.missing_values = {"", "?"};
  auto enc = RowEncoder::Create(s, {}, "in.csv");
  ASSERT_TRUE(enc.ok());
  auto p = Parse("\"\",\"?\",\"\"");
  RowEncoder::Scratch scratch;
  std::string got;
  ASSERT_TRUE(enc->Encode(p->row, "in.csv", &scratch, &got).ok());
  tensorflow::Example e;
  ASSERT_TRUE(e.ParseFromString(got));
  EXPECT_EQ(e.features().feature().at("s").bytes_list().value(0), "");
  EXPECT_EQ(e.features().feature().at("t").bytes_list().value(0), "?");
  EXPECT_EQ(e.features().feature().count("n"), 0u);  // empty int: missing
}

TEST(RowEncoder, RequiredCellMissing) {
  Schema s = Cols({{"a", ValueType::kInt}, {"b", ValueType::kString}});
  s.columns[0].required = true;
  auto enc = RowEncoder::Create(s, {}, "in.csv");
  ASSERT_TRUE(enc.ok());
  auto p = Parse(",x", 9);
  RowEncoder::Scratch scratch;
  std::string got;
  Status st = enc->Encode(p->row, "in.csv", &scratch, &got);
  EXPECT_THAT(std::string(st.message()),
              HasSubstr("in.csv:9:1: column \"a\": missing value for "
                        "required column \"a\""));
}

TEST(RowEncoder, MissingLabelIsRefusedWhereItsCellIs) {
  Schema s = Cols({{"x", ValueType::kInt}, {"y", ValueType::kString}});
  s.missing_values = {"", "?"};
  s.label = LabelSpec{"y", {{"no", 0}, {"yes", 1}}};
  auto enc = RowEncoder::Create(s, {}, "in.csv");
  ASSERT_TRUE(enc.ok()) << enc.status();
  RowEncoder::Scratch scratch;
  std::string got = "keep";
  auto empty = Parse("1,", 12);
  Status st = enc->Encode(empty->row, "in.csv", &scratch, &got);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(),
            "in.csv:12:3: label column \"y\" is missing (the cell is empty)");
  auto token = Parse("1, ?", 13);
  st = enc->Encode(token->row, "in.csv", &scratch, &got);
  EXPECT_EQ(st.message(),
            "in.csv:13:4: label column \"y\" is missing (the cell \"?\" is a "
            "missing-value token)");
  auto quoted_empty = Parse("1,\"\"", 14);
  st = enc->Encode(quoted_empty->row, "in.csv", &scratch, &got);
  EXPECT_THAT(std::string(st.message()),
              HasSubstr("in.csv:14:3: label column \"y\" is missing"));
  EXPECT_EQ(got, "keep");
}

TEST(RowEncoder, MissingLabelWithoutMapIsRefusedToo) {
  Schema s = Cols({{"x", ValueType::kInt}, {"y", ValueType::kFloat}});
  s.label = LabelSpec{"y", {}};
  auto enc = RowEncoder::Create(s, {}, "in.csv");
  ASSERT_TRUE(enc.ok()) << enc.status();
  RowEncoder::Scratch scratch;
  std::string got;
  auto p = Parse("1,", 2);
  EXPECT_THAT(
      std::string(enc->Encode(p->row, "in.csv", &scratch, &got).message()),
      HasSubstr("in.csv:2:3: label column \"y\" is missing"));
  // The label's default, when the schema gives one, stands in for it.
  s.columns[1].default_value = Value(0.0);
  auto with_default = RowEncoder::Create(s, {}, "in.csv");
  ASSERT_TRUE(with_default.ok()) << with_default.status();
  ASSERT_TRUE(with_default->Encode(p->row, "in.csv", &scratch, &got).ok());
  tensorflow::Example e;
  ASSERT_TRUE(e.ParseFromString(got));
  EXPECT_EQ(e.features().feature().at("y").float_list().value(0), 0.0f);
}

TEST(RowEncoder, ErrorsNameTheLineTheCellIsOn) {
  // A quoted line break before the bad cell: the error points at the
  // physical line the cell starts on, not the record's first line.
  Schema s = Cols({{"note", ValueType::kString}, {"y", ValueType::kInt}});
  s.label = LabelSpec{"y", {}};
  auto enc = RowEncoder::Create(s, {}, "in.csv");
  ASSERT_TRUE(enc.ok()) << enc.status();
  RowEncoder::Scratch scratch;
  std::string got;
  auto missing = Parse("\"two\nlines\",", 20);
  EXPECT_THAT(
      std::string(
          enc->Encode(missing->row, "in.csv", &scratch, &got).message()),
      HasSubstr("in.csv:21:8: label column \"y\" is missing"));
  auto bad = Parse("\"two\r\nlines\",abc", 20);
  EXPECT_THAT(
      std::string(enc->Encode(bad->row, "in.csv", &scratch, &got).message()),
      HasSubstr("in.csv:21:8: column \"y\": expected an int"));
}

TEST(RowEncoder, FieldCountMustMatchTheHeader) {
  Schema s = Cols({{"a", ValueType::kInt}});
  auto enc = RowEncoder::Create(s, {"a", "b", "c"}, "in.csv");
  ASSERT_TRUE(enc.ok()) << enc.status();
  EXPECT_EQ(enc->fields(), 3);
  RowEncoder::Scratch scratch;
  std::string got = "keep";
  EXPECT_EQ(enc->Encode(Parse("1,2,3,4", 12)->row, "in.csv", &scratch, &got)
                .message(),
            "in.csv:12:7: row has 4 fields, the header has 3");
  EXPECT_EQ(
      enc->Encode(Parse("1,2", 13)->row, "in.csv", &scratch, &got).message(),
      "in.csv:13: row has 2 fields, the header has 3");
  EXPECT_EQ(got, "keep");
  EXPECT_TRUE(enc->Encode(Parse("1,2,3")->row, "in.csv", &scratch, &got).ok());
}

TEST(RowEncoder, ColumnsAreFoundByNameInAWideHeader) {
  std::vector<std::string> header;
  for (int i = 0; i < 50000; ++i) header.push_back(fmt::format("c{}", i));
  header.push_back("c7");  // a name given twice maps to its first column
  Schema s = Cols({{"c49999", ValueType::kInt}, {"c7", ValueType::kInt}});
  auto enc = RowEncoder::Create(s, header, "in.csv");
  ASSERT_TRUE(enc.ok()) << enc.status();
  EXPECT_EQ(enc->CsvIndex("c0"), 0);
  EXPECT_EQ(enc->CsvIndex("c7"), 7);
  EXPECT_EQ(enc->CsvIndex("c49999"), 49999);
  EXPECT_EQ(enc->CsvIndex("c50000"), -1);
  EXPECT_EQ(enc->fields(), 50001);
}

TEST(RowEncoder, StrCellsMustBeUtf8Text) {
  Schema s = Cols({{"n", ValueType::kInt}, {"s", ValueType::kString}});
  auto enc = RowEncoder::Create(s, {}, "in.csv");
  ASSERT_TRUE(enc.ok()) << enc.status();
  RowEncoder::Scratch scratch;
  std::string got = "keep";
  Status st =
      enc->Encode(Parse("1,na\xEFve", 3)->row, "in.csv", &scratch, &got);
  EXPECT_THAT(std::string(st.message()),
              HasSubstr("in.csv:3:5: column \"s\": the cell \"na\\xefve\" is "
                        "not UTF-8 text (byte 0xEF, not UTF-8)"));
  EXPECT_EQ(got, "keep");
  EXPECT_TRUE(
      enc->Encode(Parse("1,na\xC3\xAFve")->row, "in.csv", &scratch, &got).ok());
}

TEST(RowEncoder, LongListsInMessagesAreCut) {
  Schema s = Cols({{"y", ValueType::kString}});
  LabelSpec label{"y", {}};
  for (int i = 0; i < 1822; ++i) {
    label.mapping.emplace(fmt::format("class-{:04d}", i), i);
  }
  s.label = label;
  auto enc = RowEncoder::Create(s, {}, "in.csv");
  ASSERT_TRUE(enc.ok()) << enc.status();
  RowEncoder::Scratch scratch;
  std::string got;
  auto p = Parse(std::string(5000, 'z'), 4);
  const std::string message(
      enc->Encode(p->row, "in.csv", &scratch, &got).message());
  EXPECT_LT(message.size(), 500u) << message;
  EXPECT_THAT(message, HasSubstr("1822 values: \"class-0000\", "));
  EXPECT_THAT(message, HasSubstr("\"class-0009\", ... and 1812 more)"));
  EXPECT_THAT(message, ::testing::Not(HasSubstr("class-0010")));

  std::vector<std::string> header;
  for (int i = 0; i < 500; ++i) header.push_back(fmt::format("col{}", i));
  auto missing =
      RowEncoder::Create(Cols({{"nope", ValueType::kInt}}), header, "wide.csv");
  ASSERT_FALSE(missing.ok());
  const std::string header_message(missing.status().message());
  EXPECT_LT(header_message.size(), 300u) << header_message;
  EXPECT_THAT(header_message,
              HasSubstr("wide.csv:1: schema column \"nope\" is not in the "
                        "header (\"col0\", "));
  EXPECT_THAT(header_message, HasSubstr("... and 490 more)"));
}

Schema Formatted() {
  Schema s = Cols({{"price", ValueType::kInt},
                   {"share", ValueType::kFloat},
                   {"w", ValueType::kFloat},
                   {"flag", ValueType::kInt}});
  s.columns[0].format = ColumnFormat::kNumber;
  s.columns[1].format = ColumnFormat::kNumber;
  s.columns[2].format = ColumnFormat::kDecimalComma;
  s.columns[3].format = ColumnFormat::kBool;
  s.missing_values = {"", "NaN"};
  return s;
}

TEST(RowEncoder, FormatsReadNumbersAsWritten) {
  auto enc = RowEncoder::Create(Formatted(), {}, "in.csv");
  ASSERT_TRUE(enc.ok()) << enc.status();
  for (const auto& [line, price, share, w, flag] :
       std::vector<std::tuple<std::string, int64_t, float, float, int64_t>>{
           {"\"$1,200\",52.6%,\"1.234,5\",Yes", 1200, 52.6f, 1234.5f, 1},
           {"-$5,7.5,\"12,5 \xE2\x82\xAC\",f", -5, 7.5f, 12.5f, 0},
           {"\"4,700\",\"1,000.25\",3,TRUE", 4700, 1000.25f, 3.0f, 1},
           {"17,0.5,\"1 000,5\",0", 17, 0.5f, 1000.5f, 0}}) {
    auto p = Parse(line);
    RowEncoder::Scratch scratch;
    std::string got;
    Status st = enc->Encode(p->row, "in.csv", &scratch, &got);
    ASSERT_TRUE(st.ok()) << line << ": " << st;
    tensorflow::Example want;
    auto& f = *want.mutable_features()->mutable_feature();
    f["price"].mutable_int64_list()->add_value(price);
    f["share"].mutable_float_list()->add_value(share);
    f["w"].mutable_float_list()->add_value(w);
    f["flag"].mutable_int64_list()->add_value(flag);
    EXPECT_EQ(got, Deterministic(want)) << line;
  }
}

TEST(RowEncoder, CellNotInItsFormatNamesLineAndColumn) {
  auto enc = RowEncoder::Create(Formatted(), {}, "in.csv");
  ASSERT_TRUE(enc.ok()) << enc.status();
  RowEncoder::Scratch scratch;
  std::string got;
  auto p = Parse("\"$1,20\",1%,2,yes");
  Status st = enc->Encode(p->row, "in.csv", &scratch, &got);
  EXPECT_EQ(std::string(Message(st)),
            "in.csv:7:1: column \"price\": expected an int written as 1,234 "
            "(format \"number\"), got \"$1,20\"");
  p = Parse("1,1%,\"2.5\",yes");
  st = enc->Encode(p->row, "in.csv", &scratch, &got);
  EXPECT_EQ(std::string(Message(st)),
            "in.csv:7:6: column \"w\": expected a float written as 1.234,5 "
            "(format \"decimal_comma\"), got \"2.5\"");
  p = Parse("1,1%,2,2");
  st = enc->Encode(p->row, "in.csv", &scratch, &got);
  EXPECT_THAT(std::string(Message(st)),
              HasSubstr("in.csv:7:8: column \"flag\": expected true or false"));
  EXPECT_TRUE(got.empty());
  // NaN is missing: left out of the Example.
  p = Parse("NaN,1%,2,n");
  ASSERT_TRUE(enc->Encode(p->row, "in.csv", &scratch, &got).ok());
}

}  // namespace
}  // namespace dtf
