#include "lib/data/schema.h"

#include <cmath>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/data/job_file.h"

namespace dtf {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

ColumnSpec Column(std::string name, ValueType type,
                  std::optional<Value> default_value = std::nullopt) {
  ColumnSpec c;
  c.name = std::move(name);
  c.type = type;
  c.default_value = std::move(default_value);
  return c;
}

VectorSpec Vector(std::string name, std::vector<std::string> columns,
                  std::optional<Value> default_value = std::nullopt) {
  VectorSpec v;
  v.name = std::move(name);
  v.columns = std::move(columns);
  v.default_value = std::move(default_value);
  return v;
}

Value Parsed(std::string_view text, ValueType type) {
  StatusOr<Value> v = ParseValue(text, type);
  EXPECT_TRUE(v.ok()) << text << ": " << v.status();
  return v.ok() ? *v : Value(std::string("<error>"));
}

std::string ErrorOf(std::string_view text, ValueType type) {
  StatusOr<Value> v = ParseValue(text, type);
  EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument) << text;
  return std::string(Message(v.status()));
}

TEST(Schema, ValueTypeNames) {
  for (ValueType t : {ValueType::kInt, ValueType::kFloat, ValueType::kString}) {
    StatusOr<ValueType> back = ParseValueType(ValueTypeName(t));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, t);
  }
  EXPECT_EQ(ValueTypeName(ValueType::kString), "str");
  StatusOr<ValueType> bad = ParseValueType("string");
  EXPECT_EQ(Message(bad.status()),
            "unknown type \"string\" (expected int, float or str)");
  EXPECT_FALSE(ParseValueType("int64").ok());
  EXPECT_FALSE(ParseValueType("Int").ok());
}

TEST(Schema, ParseInt) {
  EXPECT_EQ(Parsed("0", ValueType::kInt), Value(int64_t{0}));
  EXPECT_EQ(Parsed("-5", ValueType::kInt), Value(int64_t{-5}));
  EXPECT_EQ(Parsed("+7", ValueType::kInt), Value(int64_t{7}));
  EXPECT_EQ(Parsed("007", ValueType::kInt), Value(int64_t{7}));
  EXPECT_EQ(Parsed("9223372036854775807", ValueType::kInt), Value(INT64_MAX));
  EXPECT_EQ(Parsed("-9223372036854775808", ValueType::kInt), Value(INT64_MIN));
  EXPECT_EQ(ErrorOf("abc", ValueType::kInt), "expected an int, got \"abc\"");
  EXPECT_EQ(ErrorOf("", ValueType::kInt), "expected an int, got \"\"");
  EXPECT_EQ(ErrorOf("99999999999999999999", ValueType::kInt),
            "int out of range: \"99999999999999999999\"");
  EXPECT_EQ(ErrorOf("-9223372036854775809", ValueType::kInt),
            "int out of range: \"-9223372036854775809\"");
  for (const char* bad :
       {"1.0", " 1", "1 ", "+-1", "++1", "+", "-", "0x10", "1e3", "1_000"}) {
    EXPECT_EQ(ErrorOf(bad, ValueType::kInt),
              std::string("expected an int, got \"") + bad + "\"");
  }
}

TEST(Schema, ParseFloat) {
  EXPECT_EQ(Parsed("1.5", ValueType::kFloat), Value(1.5));
  EXPECT_EQ(Parsed("-2", ValueType::kFloat), Value(-2.0));
  EXPECT_EQ(Parsed("+3e2", ValueType::kFloat), Value(300.0));
  EXPECT_EQ(Parsed(".5", ValueType::kFloat), Value(0.5));
  EXPECT_EQ(Parsed("5.", ValueType::kFloat), Value(5.0));
  EXPECT_EQ(Parsed("1E-5", ValueType::kFloat), Value(1e-5));
  EXPECT_EQ(Parsed("71.2833", ValueType::kFloat), Value(71.2833));
  for (const char* nan : {"nan", "NaN", "NAN", "-nan", "+nan"}) {
    EXPECT_TRUE(std::isnan(std::get<double>(Parsed(nan, ValueType::kFloat))))
        << nan;
  }
  EXPECT_EQ(Parsed("inf", ValueType::kFloat), Value(HUGE_VAL));
  EXPECT_EQ(Parsed("+Inf", ValueType::kFloat), Value(HUGE_VAL));
  EXPECT_EQ(Parsed("-Infinity", ValueType::kFloat), Value(-HUGE_VAL));
  EXPECT_EQ(Parsed("INFINITY", ValueType::kFloat), Value(HUGE_VAL));
  // Underflow gives the nearest double; overflow is an error.
  EXPECT_GT(std::get<double>(Parsed("1e-320", ValueType::kFloat)), 0);
  EXPECT_EQ(Parsed("1e-400", ValueType::kFloat), Value(0.0));
  EXPECT_EQ(ErrorOf("1e400", ValueType::kFloat),
            "float out of range: \"1e400\"");
  EXPECT_EQ(ErrorOf("abc", ValueType::kFloat), "expected a float, got \"abc\"");
  for (const char* bad : {"", "1,5", "0x1p3", "--1", "+-1", " 1", "1 ", "in",
                          "infinit", "1e", "."}) {
    EXPECT_EQ(ErrorOf(bad, ValueType::kFloat),
              std::string("expected a float, got \"") + bad + "\"");
  }
}

TEST(Schema, ParseStringKeepsText) {
  EXPECT_EQ(Parsed(" any thing ", ValueType::kString),
            Value(std::string(" any thing ")));
  EXPECT_EQ(Parsed("", ValueType::kString), Value(std::string()));
}

TEST(Schema, ErrorMessagesEscapeAndShortenCells) {
  EXPECT_EQ(ErrorOf("a\"b\n", ValueType::kInt),
            "expected an int, got \"a\\\"b\\n\"");
  const std::string message = ErrorOf(std::string(500, 'x'), ValueType::kInt);
  EXPECT_EQ(message,
            "expected an int, got \"" + std::string(100, 'x') + "\"...");
}

TEST(Schema, ValueToString) {
  EXPECT_EQ(ValueToString(Value(int64_t{-42})), "-42");
  EXPECT_EQ(ValueToString(Value(0.1)), "0.1");
  EXPECT_EQ(ValueToString(Value(-1.0)), "-1");
  EXPECT_EQ(ValueToString(Value(1e300)), "1e+300");
  EXPECT_EQ(ValueToString(Value(std::string("male"))), "male");
  for (double d : {0.1, 1.0 / 3, 71.2833, 1e-310, -2.5e17}) {
    EXPECT_EQ(Parsed(ValueToString(Value(d)), ValueType::kFloat), Value(d));
  }
}

TEST(Schema, FindColumnAndIsMissing) {
  Schema schema;
  schema.columns = {Column("age", ValueType::kInt),
                    Column("sex", ValueType::kString)};
  schema.missing_values = {"", "?", "NA"};
  ASSERT_NE(schema.FindColumn("sex"), nullptr);
  EXPECT_EQ(schema.FindColumn("sex")->type, ValueType::kString);
  EXPECT_EQ(schema.FindColumn("Sex"), nullptr);
  EXPECT_TRUE(schema.IsMissing(""));
  EXPECT_TRUE(schema.IsMissing("?"));
  EXPECT_TRUE(schema.IsMissing("NA"));
  EXPECT_FALSE(schema.IsMissing("na"));
  EXPECT_FALSE(schema.IsMissing("0"));
  schema.missing_values.clear();
  EXPECT_TRUE(schema.IsMissing(""));
}

// px1..px3 float columns, a label and a vector over the pixels.
Schema GoodSchema() {
  Schema s;
  s.columns = {Column("px1", ValueType::kFloat), Column("px2", ValueType::kInt),
               Column("px3", ValueType::kFloat),
               Column("digit", ValueType::kString, Value(std::string("0")))};
  s.vectors = {Vector("pixels", {"px1", "px2", "px3"}, Value(0.0))};
  s.label = LabelSpec{"digit", {{"0", 0}, {"1", 1}}};
  return s;
}

std::string Invalid(const Schema& s) {
  Status status = ValidateSchema(s);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  return std::string(Message(status));
}

TEST(Schema, ValidateAcceptsGoodSchema) {
  EXPECT_TRUE(ValidateSchema(GoodSchema()).ok());
  EXPECT_TRUE(ValidateSchema(Schema()).ok());
}

TEST(Schema, ValidateColumns) {
  Schema s = GoodSchema();
  s.columns[1].name = "";
  EXPECT_EQ(Invalid(s), "schema.columns[1].name: empty column name");
  s = GoodSchema();
  s.columns[2].name = "px1";
  EXPECT_EQ(Invalid(s),
            "schema.columns[2].name: duplicate column \"px1\" (also "
            "schema.columns[0])");
  s = GoodSchema();
  s.columns[3].type = ValueType::kFloat;
  s.columns[3].default_value = Value(std::string("x"));
  s.label.reset();
  EXPECT_EQ(Invalid(s),
            "schema.columns[3].default: expected a float, got \"x\"");
  s.columns[3].type = ValueType::kInt;
  s.columns[3].default_value = Value(1.5);
  EXPECT_EQ(Invalid(s),
            "schema.columns[3].default: expected an int, got float 1.5");
}

TEST(Schema, ValidateVectors) {
  Schema s = GoodSchema();
  s.vectors[0].columns.push_back("px9");
  EXPECT_EQ(Invalid(s), "schema.vectors[0].columns: unknown column \"px9\"");
  s = GoodSchema();
  s.vectors[0].type = ValueType::kString;
  EXPECT_EQ(Invalid(s),
            "schema.vectors[0].type: a vector must be int or float, not str");
  s = GoodSchema();
  s.vectors[0].name = "px1";
  EXPECT_THAT(Invalid(s), ::testing::StartsWith("schema.vectors[0].name: "
                                                "\"px1\" is also a column"));
  s = GoodSchema();
  s.vectors.push_back(Vector("again", {"px3"}));
  EXPECT_EQ(Invalid(s),
            "schema.vectors[1].columns: column \"px3\" is already in vector "
            "\"pixels\"");
  s = GoodSchema();
  s.vectors[0].type = ValueType::kInt;
  s.vectors[0].default_value = Value(int64_t{0});
  EXPECT_EQ(Invalid(s),
            "schema.vectors[0].columns: column \"px1\" is float, which does "
            "not fit an int vector");
  s = GoodSchema();
  s.vectors[0].default_value = Value(int64_t{0});
  EXPECT_EQ(Invalid(s),
            "schema.vectors[0].default: expected a float, got int 0");
  s = GoodSchema();
  s.vectors[0].columns.clear();
  EXPECT_EQ(Invalid(s), "schema.vectors[0].columns: no columns");
}

TEST(Schema, ValidateLabel) {
  Schema s = GoodSchema();
  s.label->column = "income";
  EXPECT_EQ(Invalid(s), "schema.label.column: unknown column \"income\"");
  s = GoodSchema();
  s.columns[3].skip = true;
  EXPECT_EQ(Invalid(s),
            "schema.label.column: column \"digit\" is marked skip = true");
  s = GoodSchema();
  s.label->column = "px2";
  EXPECT_EQ(Invalid(s),
            "schema.label.column: column \"px2\" is part of vector "
            "\"pixels\"");
}

void ExpectSameSchema(const Schema& a, const Schema& b) {
  ASSERT_EQ(a.columns.size(), b.columns.size());
  for (size_t i = 0; i < a.columns.size(); ++i) {
    SCOPED_TRACE(a.columns[i].name);
    EXPECT_EQ(a.columns[i].name, b.columns[i].name);
    EXPECT_EQ(a.columns[i].type, b.columns[i].type);
    EXPECT_EQ(a.columns[i].required, b.columns[i].required);
    EXPECT_EQ(a.columns[i].skip, b.columns[i].skip);
    ASSERT_EQ(a.columns[i].default_value.has_value(),
              b.columns[i].default_value.has_value());
    if (a.columns[i].default_value) {
      EXPECT_EQ(ValueToString(*a.columns[i].default_value),
                ValueToString(*b.columns[i].default_value));
      EXPECT_EQ(a.columns[i].default_value->index(),
                b.columns[i].default_value->index());
    }
  }
  ASSERT_EQ(a.vectors.size(), b.vectors.size());
  for (size_t i = 0; i < a.vectors.size(); ++i) {
    EXPECT_EQ(a.vectors[i].name, b.vectors[i].name);
    EXPECT_EQ(a.vectors[i].type, b.vectors[i].type);
    EXPECT_EQ(a.vectors[i].columns, b.vectors[i].columns);
    EXPECT_EQ(a.vectors[i].default_value, b.vectors[i].default_value);
  }
  ASSERT_EQ(a.label.has_value(), b.label.has_value());
  if (a.label) {
    EXPECT_EQ(a.label->column, b.label->column);
    EXPECT_EQ(a.label->mapping, b.label->mapping);
  }
  EXPECT_EQ(a.missing_values, b.missing_values);
}

TEST(Schema, SchemaToTomlRoundTrips) {
  const std::string path = testing::TempDir() + "/schema_test_round_trip.toml";
  Schema compact;
  compact.missing_values = {"", "?", "N\"A"};
  compact.columns = {
      Column("age", ValueType::kInt, Value(int64_t{-1})),
      Column("fare", ValueType::kFloat, Value(0.1)),
      Column("big", ValueType::kFloat, Value(-1e300)),
      Column("odd", ValueType::kFloat, Value(-HUGE_VAL)),
      Column("sex", ValueType::kString, Value(std::string())),
      Column("quoted", ValueType::kString, Value(std::string("'x' \"y\"\n"))),
      Column("px*1", ValueType::kFloat),
      Column("px[2]", ValueType::kInt),
      Column("income", ValueType::kString)};
  VectorSpec v;
  v.name = "pixels";
  v.columns = {"px*1", "px[2]"};
  v.default_value = Value(0.0);
  compact.vectors = {v};
  compact.label = LabelSpec{"income", {{"<=50K", 0}, {">50K", 1}}};
  Schema tables = compact;
  tables.columns[0].required = true;
  tables.columns[4].skip = true;
  tables.columns.push_back(Column("we:ird=", ValueType::kFloat, Value(3.0)));
  tables.label->column = "age";
  for (int i = 0; i < 20; ++i) {
    tables.label->mapping["v" + std::to_string(i)] = i;
  }
  for (const Schema* schema : {&compact, &tables}) {
    const std::string text = SchemaToToml(*schema);
    std::ofstream(path, std::ios::trunc) << text;
    StatusOr<Schema> back = LoadSchemaFile(path);
    ASSERT_TRUE(back.ok()) << back.status() << "\n" << text;
    ExpectSameSchema(*schema, *back);
  }
  EXPECT_THAT(SchemaToToml(compact), HasSubstr("\"age:int=-1\""));
  EXPECT_THAT(SchemaToToml(tables), HasSubstr("[[schema.columns]]"));
  EXPECT_THAT(SchemaToToml(tables), HasSubstr("[schema.label.map]"));
}

TEST(Schema, ParseFormattedValue) {
  auto num = [](std::string_view text, ValueType type, ColumnFormat f) {
    StatusOr<Value> v = ParseFormattedValue(text, type, f);
    return v.ok() ? ValueToString(*v) : std::string(Message(v.status()));
  };
  const auto kInt = ValueType::kInt;
  const auto kFloat = ValueType::kFloat;
  const auto kNumber = ColumnFormat::kNumber;
  const auto kComma = ColumnFormat::kDecimalComma;
  EXPECT_EQ(num("$1,200", kInt, kNumber), "1200");
  EXPECT_EQ(num("-$1,234,567", kInt, kNumber), "-1234567");
  EXPECT_EQ(num("$-3", kInt, kNumber), "-3");
  EXPECT_EQ(num("\xC2\xA3"
                "12.50",
                kFloat, kNumber),
            "12.5");
  EXPECT_EQ(num("12 \xE2\x82\xAC", kInt, kNumber), "12");
  EXPECT_EQ(num("52.6%", kFloat, kNumber), "52.6");
  EXPECT_EQ(num("1e3", kFloat, kNumber), "1000");
  EXPECT_EQ(num("1,2345", kInt, kNumber),
            "expected an int written as 1,234 (format \"number\"), got "
            "\"1,2345\"");
  EXPECT_EQ(num("52.6%", kInt, kNumber),
            "expected an int written as 1,234 (format \"number\"), got "
            "\"52.6%\"");
  EXPECT_EQ(num("1.234,5", kFloat, kComma), "1234.5");
  EXPECT_EQ(num("3,14", kFloat, kComma), "3.14");
  EXPECT_EQ(num("1 234", kInt, kComma), "1234");
  EXPECT_EQ(num("-0,5 %", kFloat, kComma), "-0.5");
  EXPECT_EQ(num("3.14", kFloat, kComma),
            "expected a float written as 1.234,5 (format \"decimal_comma\"), "
            "got \"3.14\"");
  EXPECT_EQ(num("Yes", kInt, ColumnFormat::kBool), "1");
  EXPECT_EQ(num("F", kInt, ColumnFormat::kBool), "0");
  EXPECT_EQ(num("maybe", kInt, ColumnFormat::kBool),
            "expected true or false (yes/no, y/n, t/f, 1/0; format "
            "\"bool\"), got \"maybe\"");
  EXPECT_EQ(num("7", kInt, ColumnFormat::kPlain), "7");
  EXPECT_EQ(ColumnFormatName(*ParseColumnFormat("decimal_comma")),
            "decimal_comma");
  EXPECT_FALSE(ParseColumnFormat("money").ok());
}

TEST(Schema, FormatKeyLoadsValidatesAndRoundTrips) {
  const std::string path = ::testing::TempDir() + "/schema_format_s.toml";
  auto write = [&path](const std::string& text) {
    std::ofstream(path) << text;
  };
  write(
      "[schema]\ncolumns = [\n"
      "  \"a:int\",\n"
      "  { name = \"p\", type = \"float\", format = \"number\" },\n"
      "  { name = \"b\", type = \"int\", format = \"bool\" },\n"
      "]\n");
  StatusOr<Schema> s = LoadSchemaFile(path);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->columns[1].format, ColumnFormat::kNumber);
  EXPECT_EQ(s->columns[2].format, ColumnFormat::kBool);
  write(SchemaToToml(*s));
  StatusOr<Schema> back = LoadSchemaFile(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->columns[1].format, ColumnFormat::kNumber);

  write(
      "[schema]\ncolumns = [\n"
      "  { name = \"p\", type = \"str\", format = \"number\" },\n"
      "]\n");
  s = LoadSchemaFile(path);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(Message(s.status())),
              HasSubstr("schema_format_s.toml:3:"));
  EXPECT_THAT(std::string(Message(s.status())),
              HasSubstr("schema.columns[0].format: format \"number\" needs an "
                        "int or float column, not str"));
  write(
      "[schema]\ncolumns = [\n"
      "  { name = \"p\", type = \"int\", format = \"money\" },\n"
      "]\n");
  s = LoadSchemaFile(path);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(Message(s.status())),
              HasSubstr("schema_format_s.toml:3:"));
  EXPECT_THAT(std::string(Message(s.status())),
              HasSubstr("unknown format \"money\""));
  Schema bad;
  bad.columns.push_back({"f", ValueType::kFloat, std::nullopt, false, false,
                         ColumnFormat::kBool});
  EXPECT_EQ(std::string(Message(ValidateSchema(bad))),
            "schema.columns[0].format: format \"bool\" needs an int column, "
            "not float");
}

TEST(SchemaInferrer, WidensIntToFloatToStr) {
  SchemaInferrer inferrer({"a", "b", "c", "d", "e"}, {"?", "NA"});
  inferrer.Add({"1", "1", "1", "", "x"});
  inferrer.Add({"-2", "2.5", "?", "NA", "y"});
  inferrer.Add({"+3", "nan", "three", "", "1"});
  inferrer.Add({"?", "4", "", "?", "2"});
  EXPECT_EQ(inferrer.rows(), 4);
  StatusOr<Schema> schema = inferrer.Finish();
  ASSERT_TRUE(schema.ok()) << schema.status();
  ASSERT_EQ(schema->columns.size(), 5u);
  EXPECT_EQ(schema->columns[0].type, ValueType::kInt);
  EXPECT_EQ(schema->columns[1].type, ValueType::kFloat);
  EXPECT_EQ(schema->columns[2].type, ValueType::kString);
  EXPECT_EQ(schema->columns[3].type, ValueType::kString);  // no values at all
  EXPECT_EQ(schema->columns[4].type, ValueType::kString);
  EXPECT_FALSE(schema->label.has_value());
  // b's "nan" is an NA spelling in a float column: missing.
  EXPECT_THAT(schema->missing_values, ElementsAre("", "?", "NA", "nan"));
  EXPECT_FALSE(schema->columns[0].default_value.has_value());
}

// NaN/NA/null spellings do not make a numeric column str (a regression:
// "NaN" typed a column as str, and a regression target became a softmax);
// they become missing values. In a str column they are values.
TEST(SchemaInferrer, NaSpellingsAreMissingNumbers) {
  SchemaInferrer inferrer({"x", "y", "city"}, {});
  inferrer.Add({"1", "0.5", "Paris"});
  inferrer.Add({"NaN", "NA", "None"});
  inferrer.Add({"3", "null", "Rome"});
  inferrer.Add({"N/A", "2.5", "NA"});
  StatusOr<Schema> schema = inferrer.Finish("y");
  ASSERT_TRUE(schema.ok()) << schema.status();
  EXPECT_EQ(schema->columns[0].type, ValueType::kInt);
  EXPECT_EQ(schema->columns[1].type, ValueType::kFloat);
  EXPECT_EQ(schema->columns[2].type, ValueType::kString);
  EXPECT_THAT(schema->missing_values,
              ElementsAre("", "NaN", "N/A", "NA", "null"));
  ASSERT_TRUE(schema->label.has_value());
  EXPECT_TRUE(schema->label->mapping.empty());
}

TEST(SchemaInferrer, NamesExtraCells) {
  SchemaInferrer inferrer({"a"}, {});
  inferrer.Add({"1", "2.5", "z"});
  inferrer.Add({"2"});
  StatusOr<Schema> schema = inferrer.Finish();
  ASSERT_TRUE(schema.ok()) << schema.status();
  ASSERT_EQ(schema->columns.size(), 3u);
  EXPECT_EQ(schema->columns[1].name, "column_2");
  EXPECT_EQ(schema->columns[1].type, ValueType::kFloat);
  EXPECT_EQ(schema->columns[2].name, "column_3");
}

TEST(SchemaInferrer, StrLabelGetsSortedMapping) {
  SchemaInferrer inferrer({"age", "income"}, {"?"});
  inferrer.Add({"39", ">50K"});
  inferrer.Add({"50", "<=50K"});
  inferrer.Add({"?", ">50K"});
  inferrer.Add({"20", "?"});
  StatusOr<Schema> schema = inferrer.Finish("income");
  ASSERT_TRUE(schema.ok()) << schema.status();
  ASSERT_TRUE(schema->label.has_value());
  EXPECT_EQ(schema->label->column, "income");
  EXPECT_THAT(schema->label->mapping,
              ElementsAre(Pair("<=50K", 0), Pair(">50K", 1)));
}

TEST(SchemaInferrer, NumericLabelHasNoMapping) {
  SchemaInferrer inferrer({"Survived", "Fare"}, {});
  inferrer.Add({"0", "7.25"});
  inferrer.Add({"1", "71.2833"});
  StatusOr<Schema> schema = inferrer.Finish("Survived");
  ASSERT_TRUE(schema.ok()) << schema.status();
  EXPECT_EQ(schema->columns[0].type, ValueType::kInt);
  EXPECT_TRUE(schema->label->mapping.empty());
}

TEST(SchemaInferrer, LabelErrors) {
  SchemaInferrer inferrer({"id", "name"}, {});
  for (int i = 0; i < 1001; ++i) {
    const std::string name = "n" + std::to_string(i);
    inferrer.Add({std::to_string(i), name});
  }
  StatusOr<Schema> unknown = inferrer.Finish("income");
  EXPECT_EQ(Message(unknown.status()),
            "label column \"income\" is not one of the 2 columns");
  StatusOr<Schema> too_many = inferrer.Finish("name");
  EXPECT_EQ(too_many.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(too_many.status()),
              ::testing::HasSubstr("more than 1000 distinct values"));
  // A label at the cap is fine.
  SchemaInferrer at_cap({"name"}, {});
  for (int i = 0; i < 1000; ++i) at_cap.Add({"n" + std::to_string(i)});
  StatusOr<Schema> ok = at_cap.Finish("name");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->label->mapping.size(), 1000u);
}

}  // namespace
}  // namespace dtf
