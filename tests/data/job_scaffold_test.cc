#include "lib/data/job_scaffold.h"

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/data/job_file.h"
#include "tests/testing/paths.h"
#include "tests/testing/temp_dir.h"

namespace dtf {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kShared = std::string(DTF_SHARED_DIR) + "/data";

constexpr char kAdultHeader[] =
    "age,workclass,fnlwgt,education,education_num,marital_status,occupation,"
    "relationship,race,gender,capital_gain,capital_loss,hours_per_week,"
    "native_country,income\n";

TEST(JobScaffold, TitanicJobLoadsAndUsesTheColumns) {
  testing::TempDir temp("dtf_scaffold_test");
  ScaffoldOptions o;
  o.dir = temp.Join("titanic");
  o.train_csv = kShared + "/titanic/train.csv";
  o.label = "Survived";
  auto r = ScaffoldJob(o);
  ASSERT_TRUE(r.ok()) << r.status();
  auto job = LoadJobFile(o.dir + "/dtf.toml");
  ASSERT_TRUE(job.ok()) << job.status() << "\n"
                        << testing::ReadFile(o.dir + "/dtf.toml");
  ASSERT_TRUE(job->schema.label.has_value());
  EXPECT_EQ(job->schema.label->column, "Survived");
  ASSERT_EQ(job->data.split.size(), 2u);
  // Early stopping on the eval loss is on.
  ASSERT_TRUE(job->train.early_stopping.has_value());
  EXPECT_EQ(job->train.early_stopping->metric, "loss");
  std::string toml = testing::ReadFile(o.dir + "/dtf.toml");
  // Identifiers feed nothing; names ("Braund, Mr. Owen Harris") are free
  // text; low-cardinality strings get a vocabulary, the rest are hashed;
  // numbers are normalised and bucketized.
  EXPECT_THAT(toml, Not(HasSubstr("name = \"PassengerId\"")));
  EXPECT_THAT(toml, HasSubstr("[[features.text]]\nname = \"Name\""));
  EXPECT_THAT(toml, HasSubstr("[[features.categorical]]\nname = \"Sex\""));
  EXPECT_THAT(toml, HasSubstr("[[features.hashed]]\nname = \"Ticket\""));
  EXPECT_THAT(toml, HasSubstr("name = \"Age_buckets\""));
  EXPECT_THAT(toml, HasSubstr("\"Age:float\""));
  for (const char* f : {"profiles/local.toml", "profiles/cluster.example.toml",
                        "profiles/slurm.toml", "profiles/spark.toml",
                        "profiles/kubernetes.example.toml", "README.md"}) {
    EXPECT_FALSE(testing::ReadFile(o.dir + "/" + f).empty()) << f;
  }
}

// Date and free-text columns become [[features.date]] and [[features.text]]
// in a job that loads; a date column without times leaves the hour out.
TEST(JobScaffold, DateAndTextColumnsGetTheirFeatures) {
  testing::TempDir temp("dtf_scaffold_test");
  const char* words[] = {"great",    "awful", "service", "food",  "slow",
                         "friendly", "cold",  "fresh",   "again", "never"};
  std::string csv = "day,review,label\n";
  for (int i = 0; i < 300; ++i) {
    StrAppend(&csv, "2024-", i % 12 + 1 < 10 ? "0" : "", i % 12 + 1, "-1",
              i % 9, ",", words[i % 10], " ", words[(i * 3 + 1) % 10], " ",
              words[(i * 7 + 2) % 10], " visit ", i, ",", i % 2, "\n");
  }
  testing::WriteFile(temp.Join("in.csv"), csv);
  ScaffoldOptions o;
  o.dir = temp.Join("job");
  o.train_csv = temp.Join("in.csv");
  o.label = "label";
  auto r = ScaffoldJob(o);
  ASSERT_TRUE(r.ok()) << r.status();
  std::string toml = testing::ReadFile(o.dir + "/dtf.toml");
  auto job = LoadJobFile(o.dir + "/dtf.toml");
  ASSERT_TRUE(job.ok()) << job.status() << "\n" << toml;
  ASSERT_EQ(job->features.date.size(), 1u) << toml;
  EXPECT_EQ(job->features.date[0].name, "day");
  EXPECT_THAT(toml, HasSubstr("format = \"iso8601\""));
  EXPECT_THAT(toml, Not(HasSubstr("\"hour\"")));
  ASSERT_EQ(job->features.text.size(), 1u) << toml;
  EXPECT_EQ(job->features.text[0].name, "review");
}

TEST(JobScaffold, AdultTestLabelsWithADotMapLikeTrainingLabels) {
  testing::TempDir temp("dtf_scaffold_test");
  std::string train = temp.Join("adult.csv"), eval = temp.Join("test.csv");
  testing::WriteFile(
      train, kAdultHeader + testing::ReadFile(kShared + "/adult/adult.data"));
  testing::WriteFile(
      eval, kAdultHeader + testing::ReadFile(kShared + "/adult/adult.test"));
  ScaffoldOptions o;
  o.dir = temp.Join("census");
  o.train_csv = train;
  o.eval_csv = eval;
  o.label = "income";
  auto r = ScaffoldJob(o);
  ASSERT_TRUE(r.ok()) << r.status();
  auto job = LoadJobFile(o.dir + "/dtf.toml");
  ASSERT_TRUE(job.ok()) << job.status();
  const auto& map = job->schema.label->mapping;
  ASSERT_EQ(map.size(), 4u);
  EXPECT_EQ(map.at("<=50K"), map.at("<=50K."));
  EXPECT_EQ(map.at(">50K"), map.at(">50K."));
  EXPECT_NE(map.at("<=50K"), map.at(">50K"));
  ASSERT_EQ(job->data.csv.size(), 2u);
}

TEST(JobScaffold, WithoutACsvWritesASyntheticDataSet) {
  testing::TempDir temp("dtf_scaffold_test");
  ScaffoldOptions o;
  o.dir = temp.Join("demo");
  auto r = ScaffoldJob(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(testing::ReadFile(o.dir + "/data/train.csv"),
              HasSubstr("x,y,size,color,label\n"));
  auto job = LoadJobFile(o.dir + "/dtf.toml");
  ASSERT_TRUE(job.ok()) << job.status();
}

TEST(JobScaffold, RefusesANonEmptyDirectoryAndAMissingLabel) {
  testing::TempDir temp("dtf_scaffold_test");
  testing::WriteFile(temp.Join("keep"), "x");
  ScaffoldOptions o;
  o.dir = temp.path();
  EXPECT_EQ(ScaffoldJob(o).status().code(), StatusCode::kFailedPrecondition);
  o.dir = temp.Join("job");
  o.train_csv = kShared + "/titanic/train.csv";
  o.label = "Nope";
  auto r = ScaffoldJob(o);
  EXPECT_THAT(std::string(Message(r.status())), HasSubstr("\"Nope\""));
}

TEST(JobScaffold, AFailedRunLeavesNothingBehind) {
  testing::TempDir temp("dtf_scaffold_test");
  ScaffoldOptions o;
  o.train_csv = kShared + "/titanic/train.csv";
  o.label = "Nope";
  // A new directory, parents included: none of them is left.
  o.dir = temp.Join("a/b/job");
  EXPECT_FALSE(ScaffoldJob(o).ok());
  EXPECT_THAT(temp.List(), ::testing::IsEmpty());
  // An empty directory stays, empty.
  o.dir = temp.Join("empty");
  std::filesystem::create_directory(o.dir);
  EXPECT_FALSE(ScaffoldJob(o).ok());
  EXPECT_THAT(temp.List(), ::testing::ElementsAre("empty"));
  EXPECT_TRUE(std::filesystem::is_empty(o.dir));
  // An unreadable CSV, the same.
  o.train_csv = temp.Join("missing.csv");
  o.label = "Survived";
  EXPECT_EQ(ScaffoldJob(o).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(std::filesystem::is_empty(o.dir));
  EXPECT_THAT(temp.List(), ::testing::ElementsAre("empty"));
}

TEST(JobScaffold, FillsAnEmptyDirectoryWithTrailingSlash) {
  testing::TempDir temp("dtf_scaffold_test");
  std::filesystem::create_directory(temp.Join("job"));
  ScaffoldOptions o;
  o.dir = temp.Join("job/");
  o.train_csv = kShared + "/titanic/train.csv";
  o.label = "Survived";
  auto r = ScaffoldJob(o);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(temp.Join("job"))) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  EXPECT_THAT(names,
              ::testing::ElementsAre("README.md", "dtf.toml", "profiles"));
  EXPECT_THAT(testing::ReadFile(temp.Join("job/README.md")),
              HasSubstr("# job\n"));
  // An absolute CSV path stays absolute.
  EXPECT_THAT(testing::ReadFile(temp.Join("job/dtf.toml")),
              HasSubstr(StrCat("csv = [\"", o.train_csv, "\"]")));
  EXPECT_TRUE(LoadJobFile(temp.Join("job/dtf.toml")).ok());
}

TEST(JobScaffold, TabSeparatedCsvJobReadsWithATab) {
  testing::TempDir temp("dtf_scaffold_test");
  std::string rows = "a\tb\tlab\n";
  for (int i = 0; i < 60; ++i) {
    StrAppend(&rows, i % 7, "\t", i % 2 ? "x" : "y", "\t", i % 3 == 0 ? 1 : 0,
              "\n");
  }
  testing::WriteFile(temp.Join("in.tsv"), rows);
  ScaffoldOptions o;
  o.dir = temp.Join("job");
  o.train_csv = temp.Join("in.tsv");
  o.label = "lab";
  o.csv.delimiter = '\t';
  auto r = ScaffoldJob(o);
  ASSERT_TRUE(r.ok()) << r.status();
  auto job = LoadJobFile(o.dir + "/dtf.toml");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->data.csv_options.delimiter, '\t');
}

// Writes `csv` as in.csv (or `name`) under `temp` and scaffolds a job from
// it with label "label".
StatusOr<ScaffoldResult> Scaffold(const testing::TempDir& temp,
                                  const std::string& csv,
                                  const std::string& eval = "",
                                  const std::string& name = "in.csv") {
  testing::WriteFile(temp.Join(name), csv);
  ScaffoldOptions o;
  o.dir = temp.Join("job");
  o.train_csv = temp.Join(name);
  if (!eval.empty()) {
    testing::WriteFile(temp.Join("eval.csv"), eval);
    o.eval_csv = temp.Join("eval.csv");
  }
  o.label = "label";
  return ScaffoldJob(o);
}

const ScaffoldColumn* Column(const ScaffoldResult& r, const std::string& n) {
  for (const ScaffoldColumn& c : r.columns) {
    if (c.name == n) return &c;
  }
  return nullptr;
}

TEST(JobScaffold, SemicolonFileIsDetectedAndReadWithDecimalCommas) {
  testing::TempDir temp("dtf_scaffold_test");
  std::string csv = "age;income;color;score;label\n";
  for (int i = 0; i < 200; ++i) {
    StrAppend(&csv, 20 + i % 50, ";", 1000 + i, ",", i % 100, ";",
              i % 3 ? "red" : "blue", ";", i % 7, ",5;", i % 2, "\n");
  }
  auto r = Scaffold(temp, csv);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->delimiter, ';');
  EXPECT_TRUE(r->delimiter_sniffed);
  EXPECT_EQ(r->columns.size(), 5u);
  ASSERT_NE(Column(*r, "income"), nullptr);
  EXPECT_EQ(Column(*r, "income")->format, "decimal_comma");
  EXPECT_EQ(Column(*r, "income")->type, "float");
  EXPECT_EQ(Column(*r, "color")->feature, "categorical");
  auto job = LoadJobFile(temp.Join("job/dtf.toml"));
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->data.csv_options.delimiter, ';');
  EXPECT_EQ(job->schema.FindColumn("score")->format,
            ColumnFormat::kDecimalComma);
  EXPECT_EQ(r->label.task, "binary");
  ASSERT_EQ(r->label.classes.size(), 2u);
  EXPECT_EQ(r->label.classes[0], (std::pair<std::string, int64_t>{"0", 100}));
}

TEST(JobScaffold, TsvNameMeansTab) {
  testing::TempDir temp("dtf_scaffold_test");
  std::string csv = "a\tb\tlabel\n";
  for (int i = 0; i < 30; ++i) StrAppend(&csv, i % 4, "\tx", i % 3, "\t1\n");
  auto r = Scaffold(temp, csv, "", "in.tsv");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->delimiter, '\t');
}

TEST(JobScaffold, RegressionTargetWithNaNStaysNumeric) {
  testing::TempDir temp("dtf_scaffold_test");
  std::string csv = "x,price,label\n";
  for (int i = 0; i < 3000; ++i) {
    StrAppend(&csv, i % 17, ",", i % 50 == 0 ? "NaN" : StrCat(i % 97 * 1.5),
              ",", 100 + (i * 37) % 1822, ".25\n");
  }
  auto r = Scaffold(temp, csv);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->label.task, "regression");
  EXPECT_DOUBLE_EQ(r->label.min, 100.25);
  EXPECT_DOUBLE_EQ(r->label.max, 1921.25);
  EXPECT_EQ(r->missing, (std::vector<std::string>{"?", "NaN"}));
  std::string toml = testing::ReadFile(temp.Join("job/dtf.toml"));
  EXPECT_THAT(toml, HasSubstr("loss = \"squared_error\""));
  EXPECT_THAT(toml, HasSubstr("missing = [\"?\", \"NaN\"]"));
  EXPECT_THAT(toml, HasSubstr("\"price:float\""));
  EXPECT_TRUE(LoadJobFile(temp.Join("job/dtf.toml")).ok());
}

TEST(JobScaffold, RowWithoutALabelIsAnErrorAtItsLine) {
  testing::TempDir temp("dtf_scaffold_test");
  std::string csv = "x,label\n";
  for (int i = 0; i < 30; ++i) {
    StrAppend(&csv, i, ",",
              i == 6 || i == 9 ? "NaN"
              : i == 20        ? ""
                               : "1",
              "\n");
  }
  auto r = Scaffold(temp, csv);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(std::string(Message(r.status())),
            StrCat(temp.Join("in.csv"),
                   ":8: no label: column \"label\" is missing on this row (3 "
                   "rows in all); remove the rows without a label, or fill "
                   "them in"));
  EXPECT_FALSE(std::filesystem::exists(temp.Join("job")));
}

TEST(JobScaffold, DuplicateHeaderIsAnError) {
  testing::TempDir temp("dtf_scaffold_test");
  auto r = Scaffold(temp, "x,label,y,x\n1,0,2,3\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(
      std::string(Message(r.status())),
      StrCat(temp.Join("in.csv"), ":1:11: duplicate column \"x\" (also at ",
             temp.Join("in.csv"), ":1:1); give each column a name of its own"));
}

TEST(JobScaffold, EvalHeaderThatDiffersIsAnError) {
  testing::TempDir temp("dtf_scaffold_test");
  std::string rows;
  for (int i = 0; i < 30; ++i)
    StrAppend(&rows, i, ",", i % 3, ",", i % 2, "\n");
  auto r = Scaffold(temp, "a,b,label\n" + rows, "a,c,label\n" + rows);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(std::string(Message(r.status())),
            StrCat(temp.Join("eval.csv"), ":1:3: column 2 is \"c\" but in ",
                   temp.Join("in.csv"),
                   ":1:3 it is \"b\"; the eval CSV needs the training CSV's "
                   "header"));
  r = Scaffold(temp, "a,b,label\n" + rows, "a,b\n1,2\n");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(Message(r.status())),
              HasSubstr("eval.csv:1: no column \"label\" ("));
}

TEST(JobScaffold, EvalNumbersWithCurrencyWidenTheFormat) {
  testing::TempDir temp("dtf_scaffold_test");
  std::string train = "p,label\n", eval = "p,label\n";
  for (int i = 0; i < 40; ++i) {
    StrAppend(&train, i % 7 * 10, ",", i % 2, "\n");
    StrAppend(&eval, "$", i % 7 * 10, ",", i % 2, "\n");
  }
  auto r = Scaffold(temp, train, eval);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Column(*r, "p")->format, "number");
  EXPECT_EQ(Column(*r, "p")->type, "int");
}

TEST(JobScaffold, OnlyFewValuedNumbersMakeAnMlpJob) {
  testing::TempDir temp("dtf_scaffold_test");
  std::string csv = "a,b,label\n";
  const char* yes_no[] = {"yes", "No", "Y"};
  for (int i = 0; i < 60; ++i) {
    StrAppend(&csv, i % 6, ",", yes_no[i % 3], ",", i % 2, "\n");
  }
  auto r = Scaffold(temp, csv);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Column(*r, "b")->format, "bool");
  const std::string toml = testing::ReadFile(temp.Join("job/dtf.toml"));
  EXPECT_THAT(toml, HasSubstr("type = \"mlp\""));
  EXPECT_THAT(toml, HasSubstr("[train.optimizer]"));
  auto job = LoadJobFile(temp.Join("job/dtf.toml"));
  EXPECT_TRUE(job.ok()) << job.status();
}

TEST(JobScaffold, NoneIsAClassOfAStrLabel) {
  testing::TempDir temp("dtf_scaffold_test");
  std::string csv = "x,label\n";
  const char* risk[] = {"None", "Low", "High"};
  for (int i = 0; i < 60; ++i) StrAppend(&csv, i % 5, ",", risk[i % 3], "\n");
  auto r = Scaffold(temp, csv);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->label.task, "multiclass");
  EXPECT_EQ(r->label.rows, 60);
  ASSERT_EQ(r->label.classes.size(), 3u);
  EXPECT_EQ(r->label.classes[0], (std::pair<std::string, int64_t>{"High", 20}));
  EXPECT_EQ(r->label.classes[2], (std::pair<std::string, int64_t>{"None", 20}));
  auto job = LoadJobFile(temp.Join("job/dtf.toml"));
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->schema.label->mapping.at("None"), 2);
}

}  // namespace
}  // namespace dtf
