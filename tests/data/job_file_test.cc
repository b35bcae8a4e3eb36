#include "lib/data/job_file.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data/job_file_testing.h"
#include "tests/testing/paths.h"

namespace dtf {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::StartsWith;

class JobFileTest : public JobFileFixture {
 protected:
  JobFile Load(const std::string& text) {
    StatusOr<JobFile> job = LoadText(text);
    EXPECT_TRUE(job.ok()) << job.status();
    return job.ok() ? *std::move(job) : JobFile();
  }

  std::string Error(const std::string& text) { return LoadError(text); }
};

constexpr char kAdultJob[] = R"(# UCI Adult
[data]
csv = { train = ["adult/adult.data"], eval = ["adult/adult.test"] }
header = false
delimiter = ","
quote = '"'
trim_spaces = true
records = "out/records"
shards = 4
shard_key = "fnlwgt"
compression = "gzip"

[schema]
missing = ["?"]
label = { column = "income", map = { "<=50K" = 0, ">50K" = 1, "<=50K." = 0, ">50K." = 1 } }
columns = ["age:int=-1", "workclass:str", "fnlwgt:int", "income:str"]
)";

TEST_F(JobFileTest, AdultJob) {
  const JobFile job = Load(kAdultJob);
  EXPECT_EQ(job.dir, dir_);
  ASSERT_EQ(job.data.csv.size(), 2u);
  EXPECT_EQ(job.data.csv[0].split, "train");  // file order, not sorted
  EXPECT_THAT(job.data.csv[0].paths, ElementsAre(dir_ + "/adult/adult.data"));
  EXPECT_EQ(job.data.csv[1].split, "eval");
  EXPECT_THAT(job.data.csv[1].paths, ElementsAre(dir_ + "/adult/adult.test"));
  EXPECT_TRUE(job.data.split.empty());
  EXPECT_FALSE(job.data.header);
  EXPECT_EQ(job.data.csv_options.delimiter, ',');
  EXPECT_EQ(job.data.csv_options.quote, '"');
  EXPECT_TRUE(job.data.csv_options.trim_spaces);
  EXPECT_EQ(job.data.records_dir, dir_ + "/out/records");
  EXPECT_EQ(job.data.shards, 4);
  EXPECT_EQ(job.data.shard_key, "fnlwgt");
  EXPECT_EQ(job.data.compression, Compression::kGzip);
  const Schema& s = job.schema;
  EXPECT_THAT(s.missing_values, ElementsAre("", "?"));
  ASSERT_EQ(s.columns.size(), 4u);
  EXPECT_EQ(s.columns[0].name, "age");
  EXPECT_EQ(s.columns[0].type, ValueType::kInt);
  EXPECT_EQ(s.columns[0].default_value, Value(int64_t{-1}));
  EXPECT_EQ(s.columns[1].type, ValueType::kString);
  EXPECT_FALSE(s.columns[1].default_value.has_value());
  ASSERT_TRUE(s.label.has_value());
  EXPECT_EQ(s.label->column, "income");
  EXPECT_THAT(s.label->mapping, ElementsAre(Pair("<=50K", 0), Pair("<=50K.", 0),
                                            Pair(">50K", 1), Pair(">50K.", 1)));
}

TEST_F(JobFileTest, TitanicJobWithSplit) {
  const JobFile job = Load(R"(
[data]
csv = ["titanic/train.csv", "/abs/other.csv", "-"]
split = { train = 0.8, eval = 0.2 }

[schema]
label = "Survived"
[[schema.columns]]
name = "Survived"
type = "int"
default = -1
[[schema.columns]]
name = "Age"
type = "float"
default = -1
required = true
[[schema.columns]]
name = "Sex"
type = "str"
default = ""
skip = true
)");
  ASSERT_EQ(job.data.csv.size(), 1u);
  EXPECT_EQ(job.data.csv[0].split, "");
  EXPECT_THAT(job.data.csv[0].paths,
              ElementsAre(dir_ + "/titanic/train.csv", "/abs/other.csv", "-"));
  ASSERT_EQ(job.data.split.size(), 2u);
  EXPECT_EQ(job.data.split[0].name, "train");
  EXPECT_DOUBLE_EQ(job.data.split[0].fraction, 0.8);
  EXPECT_EQ(job.data.split[1].name, "eval");
  EXPECT_TRUE(job.data.header);
  const Schema& s = job.schema;
  ASSERT_EQ(s.columns.size(), 3u);
  EXPECT_EQ(s.columns[1].default_value, Value(-1.0));  // int coerced to float
  EXPECT_TRUE(s.columns[1].required);
  EXPECT_FALSE(s.columns[1].skip);
  EXPECT_EQ(s.columns[2].default_value, Value(std::string()));
  EXPECT_TRUE(s.columns[2].skip);
  ASSERT_TRUE(s.label.has_value());
  EXPECT_EQ(s.label->column, "Survived");
  EXPECT_TRUE(s.label->mapping.empty());
}

TEST_F(JobFileTest, Defaults) {
  const JobFile job = Load("[data]\ncsv = \"a.csv\"\n");
  EXPECT_THAT(job.data.csv[0].paths, ElementsAre(dir_ + "/a.csv"));
  EXPECT_TRUE(job.data.header);
  EXPECT_EQ(job.data.csv_options.delimiter, ',');
  EXPECT_EQ(job.data.csv_options.quote, '"');
  EXPECT_TRUE(job.data.csv_options.trim_spaces);
  EXPECT_EQ(job.data.records_dir, dir_ + "/records");
  EXPECT_EQ(job.data.shards, 1);
  EXPECT_EQ(job.data.shard_key, "");
  EXPECT_EQ(job.data.compression, Compression::kNone);
  EXPECT_TRUE(job.schema.columns.empty());
  EXPECT_THAT(job.schema.missing_values, ElementsAre(""));
  const JobFile empty = Load("");
  EXPECT_TRUE(empty.data.csv.empty());
}

TEST_F(JobFileTest, ParsedTextReadsAsTheFileWould) {
  const std::string text = "[data]\ncsv = \"a.csv\"\nshards = 3\n";
  StatusOr<JobFile> parsed =
      ParseJobFile(text, dir_ + "/job.toml", {"data.shards=5"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  // Nothing was written: the text is all there is.
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/job.toml"));
  StatusOr<JobFile> loaded =
      LoadJobFile(Write("job.toml", text), {"data.shards=5"});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(parsed->path, loaded->path);
  EXPECT_EQ(parsed->dir, dir_);
  EXPECT_THAT(parsed->data.csv[0].paths, ElementsAre(dir_ + "/a.csv"));
  EXPECT_EQ(parsed->data.shards, 5);
  EXPECT_EQ(parsed->data.records_dir, loaded->data.records_dir);
  EXPECT_EQ(
      ParseJobFile("[data]\nshards = \"x\"\n", "in/job.toml").status().code(),
      StatusCode::kInvalidArgument);
  EXPECT_THAT(
      std::string(Message(ParseJobFile("[data\n", "in/job.toml").status())),
      StartsWith("in/job.toml:1:"));
}

TEST_F(JobFileTest, TabDelimiter) {
  const JobFile job = Load("[data]\ndelimiter = \"\\t\"\nquote = \"'\"\n");
  EXPECT_EQ(job.data.csv_options.delimiter, '\t');
  EXPECT_EQ(job.data.csv_options.quote, '\'');
}

TEST_F(JobFileTest, UnknownTopLevelKeys) {
  EXPECT_EQ(Error("top = 1\n[data]\n"),
            "job.toml:1:1: top: unknown table (expected one of data, schema, "
            "features, model, train)");
  EXPECT_EQ(Error("[data]\n[modle]\ntype = \"mlp\"\n"),
            "job.toml:2:2: modle: unknown table (did you mean model?)");
  EXPECT_EQ(Error("[feature.numeric]\nname = \"x\"\n"),
            "job.toml:1:2: feature: unknown table (did you mean features?)");
  EXPECT_EQ(Error("model = 3\n"),
            "job.toml:1:9: model: expected a table ([model]), got an "
            "integer");
}

TEST_F(JobFileTest, CompactColumns) {
  const JobFile job = Load(R"([schema]
columns = ["Pclass:int=-1", "Sex:str=''", "Embarked:str=", " Age : float = -1 ",
           "Ticket:str='x y'", "Note:str=a=b", "Fare:float=nan"]
)");
  const std::vector<ColumnSpec>& c = job.schema.columns;
  ASSERT_EQ(c.size(), 7u);
  EXPECT_EQ(c[0].default_value, Value(int64_t{-1}));
  EXPECT_EQ(c[1].default_value, Value(std::string()));
  EXPECT_EQ(c[2].default_value, Value(std::string()));
  EXPECT_EQ(c[3].name, "Age");
  EXPECT_EQ(c[3].type, ValueType::kFloat);
  EXPECT_EQ(c[3].default_value, Value(-1.0));
  EXPECT_EQ(c[4].default_value, Value(std::string("x y")));
  EXPECT_EQ(c[5].default_value, Value(std::string("a=b")));
  EXPECT_TRUE(std::isnan(std::get<double>(*c[6].default_value)));
}

TEST_F(JobFileTest, DefaultCoercion) {
  const JobFile job = Load(
      "[[schema.columns]]\nname = \"a\"\ntype = \"int\"\ndefault = 2.0\n"
      "[[schema.columns]]\nname = \"b\"\ntype = \"float\"\ndefault = 3\n");
  EXPECT_EQ(job.schema.columns[0].default_value, Value(int64_t{2}));
  EXPECT_EQ(job.schema.columns[1].default_value, Value(3.0));
  EXPECT_EQ(Error("[[schema.columns]]\nname = \"a\"\ntype = \"int\"\n"
                  "default = 2.5\n"),
            "job.toml:4:11: schema.columns[0].default: expected an int, got "
            "2.5");
  EXPECT_EQ(Error("[[schema.columns]]\nname = \"a\"\ntype = \"str\"\n"
                  "default = 0\n"),
            "job.toml:4:11: schema.columns[0].default: expected a str, got 0");
}

TEST_F(JobFileTest, VectorsWithGlobs) {
  std::string columns;
  for (int i = 1; i <= 12; ++i) {
    columns += "\"px" + std::to_string(i) + ":float\", ";
  }
  const JobFile job = Load("[schema]\ncolumns = [" + columns +
                           "\"a*b:int\", \"label:int\"]\n"
                           "[[schema.vectors]]\nname = \"pixels\"\n"
                           "columns = [\"px1?\", \"px[2-3]\", \"a\\\\*b\"]\n"
                           "default = 0\n");
  ASSERT_EQ(job.schema.vectors.size(), 1u);
  const VectorSpec& v = job.schema.vectors[0];
  EXPECT_EQ(v.type, ValueType::kFloat);
  EXPECT_THAT(v.columns,
              ElementsAre("px10", "px11", "px12", "px2", "px3", "a*b"));
  EXPECT_EQ(v.default_value, Value(0.0));
  const JobFile all = Load("[schema]\ncolumns = [" + columns +
                           "]\n[[schema.vectors]]\nname = \"p\"\n"
                           "type = \"float\"\ncolumns = [\"px*\"]\n");
  ASSERT_EQ(all.schema.vectors[0].columns.size(), 12u);
  EXPECT_EQ(all.schema.vectors[0].columns[1], "px2");  // column order
}

TEST_F(JobFileTest, DataErrors) {
  EXPECT_EQ(Error("[data]\nshard = 4\n"),
            "job.toml:2:1: data.shard: unknown key (did you mean shards?)");
  EXPECT_EQ(Error("[data]\nHeader = true\n"),
            "job.toml:2:1: data.Header: unknown key (did you mean header?)");
  EXPECT_EQ(Error("[data]\nfrobnicate = 1\n"),
            "job.toml:2:1: data.frobnicate: unknown key (expected one of csv, "
            "split, header, delimiter, quote, trim_spaces, records, shards, "
            "shard_key, compression)");
  EXPECT_EQ(Error("[data]\nheader = \"yes\"\n"),
            "job.toml:2:10: data.header: expected true or false, got \"yes\"");
  EXPECT_EQ(Error("[data]\ndelimiter = \";;\"\n"),
            "job.toml:2:13: data.delimiter: expected one character (one "
            "byte), got \";;\"");
  EXPECT_EQ(Error("[data]\ndelimiter = \"\\n\"\n"),
            "job.toml:2:13: data.delimiter: cannot be a line break");
  EXPECT_EQ(Error("[data]\ndelimiter = \"'\"\nquote = \"'\"\n"),
            "job.toml:3:9: data.quote: the delimiter and the quote must "
            "differ");
  EXPECT_EQ(Error("[data]\n\nshards = 0\n"),
            "job.toml:3:10: data.shards: must be at least 1, got 0");
  EXPECT_EQ(Error("[data]\nshards = 1.5\n"),
            "job.toml:2:10: data.shards: expected an integer, got 1.5");
  EXPECT_EQ(Error("[data]\ncompression = \"bz2\"\n"),
            "job.toml:2:15: data.compression: unknown compression \"bz2\" "
            "(expected none, gzip or zlib)");
  EXPECT_EQ(Error("[data]\ncsv = []\n"),
            "job.toml:2:7: data.csv: no files listed");
  EXPECT_EQ(Error("[data]\ncsv = 5\n"),
            "job.toml:2:7: data.csv: expected a list of files or a table of "
            "splits ({ train = [...], eval = [...] }), got an integer");
  EXPECT_EQ(Error("[data]\ncsv = [\"a.csv\", 3]\n"),
            "job.toml:2:17: data.csv[1]: expected a string, got an integer");
  EXPECT_EQ(Error("[data]\ncsv = { train = [] }\n"),
            "job.toml:2:17: data.csv.train: no files listed");
  EXPECT_EQ(Error("data = 5\n"),
            "job.toml:1:8: data: expected a table ([data]), got an integer");
  EXPECT_EQ(Error("[data]\nrecords = \"\"\n"),
            "job.toml:2:11: data.records: empty path");
}

TEST_F(JobFileTest, SplitErrors) {
  EXPECT_EQ(Error("[data]\ncsv = [\"a.csv\"]\nsplit = { train = 0.8, eval = "
                  "0.1 }\n"),
            "job.toml:3:9: data.split: fractions sum to 0.9, not 1");
  EXPECT_EQ(Error("[data]\ncsv = [\"a.csv\"]\nsplit = { train = 1.2, eval = "
                  "-0.2 }\n"),
            "job.toml:3:31: data.split.eval: a fraction must be > 0, got -0.2");
  EXPECT_EQ(Error("[data]\ncsv = { train = [\"a\"] }\nsplit = { train = 1 "
                  "}\n"),
            "job.toml:3:9: data.split: needs csv to be one list of files (csv "
            "= [...]); a table of csv splits is split already");
  EXPECT_EQ(Error("[data]\nsplit = { train = 1 }\n"),
            "job.toml:2:9: data.split: needs csv to be one list of files (csv "
            "= [...]); a table of csv splits is split already");
  EXPECT_EQ(Error("[data]\ncsv = [\"a\"]\nsplit = 0.5\n"),
            "job.toml:3:9: data.split: expected a table like { train = 0.8, "
            "eval = 0.2 }, got a float");
  // Within 1e-9 of 1 is accepted.
  const JobFile job =
      Load("[data]\ncsv = [\"a\"]\nsplit = { a = 0.1, b = 0.2, c = 0.7 }\n");
  EXPECT_EQ(job.data.split.size(), 3u);
}

TEST_F(JobFileTest, SchemaErrors) {
  EXPECT_EQ(Error("[schema]\nlable = \"x\"\n"),
            "job.toml:2:1: schema.lable: unknown key (did you mean label?)");
  EXPECT_EQ(Error("[[schema.columns]]\nname = \"a\"\ntype = \"string\"\n"),
            "job.toml:3:8: schema.columns[0].type: unknown type \"string\" "
            "(expected int, float or str)");
  EXPECT_EQ(Error("[[schema.columns]]\nname = \"a\"\ntype = \"float\"\n"
                  "default = \"x\"\n"),
            "job.toml:4:11: schema.columns[0].default: expected a float, got "
            "\"x\"");
  EXPECT_EQ(Error("[[schema.columns]]\ntype = \"int\"\n"),
            "job.toml:1:1: schema.columns[0].name: missing");
  EXPECT_EQ(
      Error("[[schema.columns]]\nname = \"a\"\n"),
      "job.toml:1:1: schema.columns[0].type: missing (int, float or str)");
  EXPECT_EQ(Error("[[schema.columns]]\nname = \"a\"\ntype = \"int\"\nskp = "
                  "true\n"),
            "job.toml:4:1: schema.columns[0].skp: unknown key (did you mean "
            "skip?)");
  EXPECT_EQ(Error("[[schema.columns]]\nname = \"a\"\ntype = \"int\"\n"
                  "[[schema.columns]]\nname = \"a\"\ntype = \"str\"\n"),
            "job.toml:5:8: schema.columns[1].name: duplicate column \"a\" "
            "(also schema.columns[0])");
  EXPECT_EQ(Error("[schema]\ncolumns = [\"a:int\", \"age\"]\n"),
            "job.toml:2:21: schema.columns[1]: expected \"name:type\" or "
            "\"name:type=default\", got \"age\"");
  EXPECT_EQ(Error("[schema]\ncolumns = [\"age:int=x\"]\n"),
            "job.toml:2:12: schema.columns[0].default: expected an int, got "
            "\"x\"");
  EXPECT_EQ(Error("[schema]\ncolumns = [\"age:integer\"]\n"),
            "job.toml:2:12: schema.columns[0]: unknown type \"integer\" "
            "(expected int, float or str)");
  EXPECT_EQ(Error("[schema]\ncolumns = [\"a:int\", \"a:str\"]\n"),
            "job.toml:2:21: schema.columns[1].name: duplicate column \"a\" "
            "(also schema.columns[0])");
  EXPECT_EQ(Error("[schema]\ncolumns = [1]\n"),
            "job.toml:2:12: schema.columns[0]: expected \"name:type\" or a "
            "table, got an integer");
  EXPECT_EQ(Error("[schema]\nmissing = [\"?\", 1]\n"),
            "job.toml:2:17: schema.missing[1]: expected a string, got an "
            "integer");
}

TEST_F(JobFileTest, VectorAndLabelErrors) {
  const std::string columns =
      "[schema]\ncolumns = [\"px1:float\", \"y:str\"]\n";
  EXPECT_EQ(
      Error(columns + "[[schema.vectors]]\nname = \"p\"\ncolumns = [\"px1\", "
                      "\"px9\"]\n"),
      "job.toml:5:11: schema.vectors[0].columns: unknown column \"px9\"");
  EXPECT_EQ(
      Error(columns + "[[schema.vectors]]\nname = \"p\"\ncolumns = [\"q*\"]\n"),
      "job.toml:5:11: schema.vectors[0].columns: pattern \"q*\" matches "
      "no column");
  EXPECT_EQ(Error(columns + "[[schema.vectors]]\nname = \"p\"\ntype = \"str\"\n"
                            "columns = [\"px1\"]\n"),
            "job.toml:5:8: schema.vectors[0].type: a vector must be int or "
            "float, not str");
  EXPECT_EQ(Error(columns + "[[schema.vectors]]\nname = \"p\"\n"),
            "job.toml:3:1: schema.vectors[0].columns: missing");
  EXPECT_EQ(Error(columns + "label = \"income\"\n"),
            "job.toml:3:9: schema.label.column: unknown column \"income\"");
  EXPECT_EQ(Error(columns + "label = { column = \"income\" }\n"),
            "job.toml:3:20: schema.label.column: unknown column \"income\"");
  EXPECT_EQ(
      Error(columns + "label = { column = \"y\", map = { a = \"0\" } }\n"),
      "job.toml:3:37: schema.label.map.a: expected an integer, got "
      "\"0\"");
  EXPECT_EQ(Error(columns + "label = { column = \"y\", map = { \"<=50K\" = 0.5 "
                            "} }\n"),
            "job.toml:3:43: schema.label.map.\"<=50K\": expected an integer, "
            "got 0.5");
  EXPECT_EQ(Error(columns + "label = { colum = \"y\" }\n"),
            "job.toml:3:11: schema.label.colum: unknown key (did you mean "
            "column?)");
  EXPECT_EQ(Error(columns + "label = 3\n"),
            "job.toml:3:9: schema.label: expected a column name or a table { "
            "column = ..., map = { ... } }, got an integer");
}

TEST_F(JobFileTest, ShardKeyMustBeAColumnWithoutHeader) {
  EXPECT_EQ(Error("[data]\nheader = false\nshard_key = \"id\"\n"
                  "[schema]\ncolumns = [\"a:int\"]\n"),
            "job.toml:3:13: data.shard_key: unknown column \"id\"");
  // With a header the key may name a CSV column the schema leaves out.
  EXPECT_EQ(Load("[data]\nshard_key = \"id\"\n[schema]\ncolumns = "
                 "[\"a:int\"]\n")
                .data.shard_key,
            "id");
}

TEST_F(JobFileTest, SyntaxErrorsAndMissingFiles) {
  EXPECT_THAT(Error("[data]\nheader = \n"), StartsWith("job.toml:2:"));
  EXPECT_THAT(Error("[data]\nshards = 1\nshards = 2\n"),
              StartsWith("job.toml:3:"));
  StatusOr<JobFile> missing = LoadJobFile(dir_ + "/nope.toml");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(Message(missing.status()), HasSubstr("nope.toml"));
}

TEST_F(JobFileTest, LoadSchemaFile) {
  StatusOr<Schema> schema = LoadSchemaFile(
      Write("schema.toml", "[schema]\ncolumns = [\"a:int\"]\nlabel = \"a\"\n"));
  ASSERT_TRUE(schema.ok()) << schema.status();
  EXPECT_EQ(schema->columns.size(), 1u);
  StatusOr<Schema> none = LoadSchemaFile(Write("none.toml", "[data]\n"));
  EXPECT_EQ(none.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(none.status()),
              HasSubstr("none.toml:1:1: schema: no [schema] table"));
}

// Reads every file of `job` and parses each non-missing cell as its column's
// type; returns the number of rows, or -1 after a failure.
int64_t ParseEveryCell(const JobFile& job) {
  const Schema& schema = job.schema;
  int64_t rows = 0;
  for (const CsvSource& source : job.data.csv) {
    for (const std::string& path : source.paths) {
      StatusOr<std::vector<std::vector<std::string>>> records =
          ReadCsvFile(path, job.data.csv_options);
      EXPECT_TRUE(records.ok()) << records.status();
      if (!records.ok()) return -1;
      std::vector<const ColumnSpec*> columns;
      for (size_t r = 0; r < records->size(); ++r) {
        const std::vector<std::string>& record = (*records)[r];
        if (r == 0) {
          for (size_t i = 0; i < record.size(); ++i) {
            columns.push_back(job.data.header ? schema.FindColumn(record[i])
                                              : &schema.columns.at(i));
          }
          if (job.data.header) continue;
        }
        ++rows;
        for (size_t i = 0; i < record.size(); ++i) {
          if (columns[i] == nullptr || schema.IsMissing(record[i])) continue;
          if (columns[i]->name == schema.label->column &&
              !schema.label->mapping.empty()) {
            EXPECT_EQ(schema.label->mapping.count(record[i]), 1u) << record[i];
            continue;
          }
          StatusOr<Value> v = ParseValue(record[i], columns[i]->type);
          EXPECT_TRUE(v.ok()) << path << " row " << r << ": " << v.status();
          if (!v.ok()) return -1;
        }
      }
    }
  }
  return rows;
}

TEST_F(JobFileTest, DocumentedExamplesReadTheSampleData) {
  const std::string data = std::string(DTF_SHARED_DIR) + "/data";
  const JobFile titanic = Load("[data]\ncsv = [\"" + data +
                               "/titanic/train.csv\"]\n"
                               "split = { train = 0.8, eval = 0.2 }\n"
                               "[schema]\nlabel = \"Survived\"\ncolumns = [\n"
                               "  \"Survived:int=-1\", \"Pclass:int=-1\", "
                               "\"Sex:str=''\", \"Age:float=-1\",\n"
                               "  \"SibSp:int=-1\", \"Parch:int=-1\", "
                               "\"Ticket:str=''\", \"Fare:float=-1\",\n"
                               "  \"Embarked:str=''\",\n]\n");
  EXPECT_EQ(ParseEveryCell(titanic), 891);
  const JobFile adult = Load(
      "[data]\ncsv = { train = [\"" + data +
      "/adult/adult.data\"], eval = [\"" + data +
      "/adult/adult.test\"] }\nheader = false\n[schema]\nmissing = "
      "[\"?\"]\nlabel = { column = \"income\", map = { \"<=50K\" = 0, "
      "\">50K\" = 1, \"<=50K.\" = 0, \">50K.\" = 1 } }\ncolumns = [\n"
      "\"age:int\", \"workclass:str\", \"fnlwgt:int\", \"education:str\", "
      "\"education_num:int\", \"marital_status:str\", \"occupation:str\", "
      "\"relationship:str\", \"race:str\", \"gender:str\", "
      "\"capital_gain:int\", \"capital_loss:int\", \"hours_per_week:int\", "
      "\"native_country:str\", \"income:str\",\n]\n");
  EXPECT_EQ(ParseEveryCell(adult), 32561 + 16281);
}

TEST_F(JobFileTest, RelativePathsFollowTheJobFile) {
  std::filesystem::create_directories(dir_ + "/sub");
  const std::string path =
      Write("sub/job.toml", "[data]\ncsv = [\"../data/x.csv\"]\n");
  StatusOr<JobFile> job = LoadJobFile(path);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->dir, dir_ + "/sub");
  EXPECT_THAT(job->data.csv[0].paths, ElementsAre(dir_ + "/data/x.csv"));
  EXPECT_EQ(job->data.records_dir, dir_ + "/sub/records");
}

}  // namespace
}  // namespace dtf
