// The dtf binary as a user meets it: exit codes, messages, clean failure.
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "tests/testing/paths.h"
#include "tests/testing/temp_dir.h"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

struct Result {
  int code = -1;
  std::string out, err;
};

std::string Slurp(const fs::path& p) {
  return dtf::testing::ReadFile(p.string());
}

class CliTest : public ::testing::Test {
 protected:
  // Runs `dtf <args>` through the shell in dir_, with `env` before it.
  Result Run(const std::string& args, const std::string& env = "") {
    std::string cmd = "cd '" + dir_.string() + "' && " + env + " '" +
                      DTF_BINARY + "' " + args + " >out.txt 2>err.txt";
    int status = std::system(cmd.c_str());
    Result r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = Slurp(dir_ / "out.txt");
    r.err = Slurp(dir_ / "err.txt");
    return r;
  }

  void Write(const std::string& name, const std::string& contents) {
    dtf::testing::WriteFile((dir_ / name).string(), contents);
  }

  dtf::testing::TempDir temp_{"dtf_cli_test"};
  fs::path dir_ = temp_.path();
};

constexpr char kSchema[] = R"([schema]
[[schema.columns]]
name = "a"
type = "int"
[[schema.columns]]
name = "b"
type = "str"
)";

TEST_F(CliTest, NoArgumentsPrintsHelpAndExits2) {
  Result r = Run("");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("gen-records"));
}

TEST_F(CliTest, VersionExits0) {
  Result r = Run("--version");
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("dtf 0."));
}

TEST_F(CliTest, UnknownFlagIsAUsageError) {
  Result r = Run("inspect --no-such-flag x.tfrecord");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("no-such-flag"));
}

TEST_F(CliTest, SubcommandHelpExits0) {
  Result r = Run("gen-records --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("--shards"));
}

TEST_F(CliTest, BadValueNamesFileLineColumnAndLeavesNoOutput) {
  Write("schema.toml", kSchema);
  Write("in.csv", "a,b\n1,x\n2,y\nzz,w\n");
  Result r = Run("gen-records --schema schema.toml --out records in.csv");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("in.csv:4:1:"));
  EXPECT_THAT(r.err, HasSubstr("\"zz\""));
  EXPECT_FALSE(fs::exists(dir_ / "records"));
}

TEST_F(CliTest, SkipReportsRejectedRowsAndSucceeds) {
  Write("schema.toml", kSchema);
  Write("in.csv", "a,b\n1,x\nbad,y\n3,z\n");
  Result r = Run(
      "gen-records --schema schema.toml --out records --on-error skip --json "
      "in.csv");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"rows_written\": 2"));
  EXPECT_THAT(r.out, HasSubstr("\"rows_skipped\": 1"));
  EXPECT_THAT(r.out, HasSubstr("\"line\": 3"));
}

TEST_F(CliTest, GenRecordsThenInspectPrintsTheRows) {
  Write("schema.toml", kSchema);
  Write("in.csv", "a,b\n1,x\n-2,\"y, z\"\n");
  ASSERT_EQ(Run("gen-records --schema schema.toml --out records in.csv").code,
            0);
  Result r = Run("inspect records/part-00000-of-00001.tfrecord");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out,
            "{\"a\": {\"int64\": [1]}, \"b\": {\"bytes\": [\"x\"]}}\n"
            "{\"a\": {\"int64\": [-2]}, \"b\": {\"bytes\": [\"y, z\"]}}\n");
}

TEST_F(CliTest, JobWhoseEvalSourceFailsLeavesNoRecordsOfAnySplit) {
  Write("dtf.toml",
        "[data]\ncsv = { train = [\"train.csv\"], eval = [\"eval.csv\"] }\n"
        "[schema]\ncolumns = [\"a:int\", \"b:str\"]\n");
  Write("train.csv", "a,b\n1,x\n2,y\n");
  Write("eval.csv", "a,b\n3,z\nbad,w\n");
  Result r = Run("gen-records --job dtf.toml");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("eval.csv:3:1:"));
  EXPECT_FALSE(fs::exists(dir_ / "records")) << r.err;

  // An earlier good output is not half-replaced by a failed --overwrite.
  Write("eval.csv", "a,b\n3,z\n");
  ASSERT_EQ(Run("gen-records --job dtf.toml").code, 0);
  const fs::path train = dir_ / "records/train/part-00000-of-00001.tfrecord";
  const fs::path eval = dir_ / "records/eval/part-00000-of-00001.tfrecord";
  const std::string train_bytes = Slurp(train), eval_bytes = Slurp(eval);
  Write("train.csv", "a,b\n7,x\n8,y\n9,z\n");
  Write("eval.csv", "a,b\n3,z\nbad,w\n");
  r = Run("gen-records --job dtf.toml --overwrite");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(Slurp(train), train_bytes);
  EXPECT_EQ(Slurp(eval), eval_bytes);
  std::vector<std::string> left;
  for (const auto& e : fs::recursive_directory_iterator(dir_ / "records")) {
    left.push_back(fs::relative(e.path(), dir_ / "records").string());
  }
  std::sort(left.begin(), left.end());
  EXPECT_THAT(left, ::testing::ElementsAre(
                        "eval", "eval/part-00000-of-00001.tfrecord", "train",
                        "train/part-00000-of-00001.tfrecord"));
}

TEST_F(CliTest, MissingLabelNamesFileAndLineOrIsSkipped) {
  Write("schema.toml",
        "[schema]\ncolumns = [\"a:int\", \"b:str\"]\nmissing = [\"?\"]\n"
        "label = { column = \"b\", map = { x = 0, y = 1 } }\n");
  Write("in.csv", "a,b\n1,x\n2,\n3,y\n4,?\n");
  Result r = Run("gen-records --schema schema.toml --out records in.csv");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("in.csv:3:3: label column \"b\" is missing"));
  EXPECT_FALSE(fs::exists(dir_ / "records"));
  r =
      Run("gen-records --schema schema.toml --out records --on-error skip "
          "in.csv");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("skipped 2 rows"));
  EXPECT_THAT(r.err, HasSubstr("in.csv:5:3: label column \"b\" is missing"));
}

TEST_F(CliTest, QuotedLineBreaksReachTheRecordsByteForByte) {
  Write("schema.toml", kSchema);
  Write("in.csv", "a,b\r\n1,\"x\r\ny\"\r\n2,\" z\n\"\r\n");
  ASSERT_EQ(
      Run("gen-records --schema schema.toml --out records --no-trim in.csv")
          .code,
      0);
  Result r = Run("inspect records/part-00000-of-00001.tfrecord");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out,
            "{\"a\": {\"int64\": [1]}, \"b\": {\"bytes\": "
            "[\"x\\u000d\\u000ay\"]}}\n"
            "{\"a\": {\"int64\": [2]}, \"b\": {\"bytes\": [\" z\\u000a\"]}}\n");
}

// A job with a date and a text feature: gen-records keeps the raw strings,
// train learns the label from the text, predict scores with the exported
// model, and a record whose date does not parse fails predict naming it.
TEST_F(CliTest, DateAndTextFeaturesTrainAndPredict) {
  const char* kGood[] = {"great", "wonderful", "loved it"};
  const char* kBad[] = {"awful", "boring", "hated it"};
  const char* kWhen[] = {"2024-03-05T14:30:00Z", "03/07/2024", "20240309", ""};
  std::string csv = "when,review,label\n";
  for (int i = 0; i < 400; ++i) {
    const bool good = (i * 7 + i / 3) % 2 == 0;
    csv += std::string(kWhen[i % 4]) + ",\"The film was " +
           (good ? kGood[i % 3] : kBad[i % 3]) + ", said reviewer " +
           std::to_string(i) + "\"," + (good ? "1" : "0") + "\n";
  }
  Write("data.csv", csv);
  const std::string job = R"([data]
csv = ["data.csv"]
split = { train = 1.0 }
records = "records"
shards = 1

[schema]
label = "label"
columns = ["when:str", "review:str", "label:int"]

[[features.date]]
name = "when"
default = "2024-01-01"
parts = ["month", "weekday", "epoch_days"]
embedding = 2
wide = true

[[features.text]]
name = "review"
buckets = 500
embedding = 4
wide = true

[model]
type = "wide_deep"
hidden = [8]

[train]
epochs = 10
output_dir = "out"

[train.wide_optimizer]
type = "ftrl"
learning_rate = 0.1
)";
  Write("dtf.toml", job);
  Result r = Run("gen-records --job dtf.toml");
  ASSERT_EQ(r.code, 0) << r.err;
  r = Run("train --job dtf.toml");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(Slurp(dir_ / "out/model/model.toml"),
              HasSubstr("[[features.text]]\nname = \"review\""));
  r =
      Run("predict --model out/model --input 'records/train/*' --format csv "
          "--keep label");
  ASSERT_EQ(r.code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, "label,probability,class");
  int rows = 0, right = 0;
  while (std::getline(lines, line)) {
    ++rows;
    right += line.front() == line.back();  // label first, class last
  }
  EXPECT_EQ(rows, 400);
  EXPECT_GE(right, 390);

  Write("bad.csv", "when,review,label\n2024-02-30,\"great\",1\n");
  std::string bad = job;
  bad.replace(bad.find("data.csv"), 8, "bad.csv");
  bad.replace(bad.find("\"records\""), 9, "\"badrec\"");
  Write("bad.toml", bad);
  ASSERT_EQ(Run("gen-records --job bad.toml").code, 0);
  r = Run("predict --model out/model --input 'badrec/train/*'");
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err, HasSubstr("date feature \"when\": column \"when\": "
                               "\"2024-02-30\" is not a date: day 30 is "
                               "not in 1..29 for 2024-02"));
  EXPECT_EQ(r.out, "");
}

TEST_F(CliTest, ExistingShardsNeedOverwrite) {
  Write("schema.toml", kSchema);
  Write("in.csv", "a,b\n1,x\n");
  ASSERT_EQ(Run("gen-records --schema schema.toml --out r in.csv").code, 0);
  Result again = Run("gen-records --schema schema.toml --out r in.csv");
  EXPECT_EQ(again.code, 2);
  EXPECT_THAT(again.err, HasSubstr("--overwrite"));
  EXPECT_EQ(
      Run("gen-records --schema schema.toml --out r --overwrite in.csv").code,
      0);
}

TEST_F(CliTest, InspectReportsCorruptionWithOffset) {
  Write("schema.toml", kSchema);
  Write("in.csv", "a,b\n1,x\n2,y\n");
  ASSERT_EQ(Run("gen-records --schema schema.toml --out r in.csv").code, 0);
  fs::path shard = dir_ / "r" / "part-00000-of-00001.tfrecord";
  std::string bytes = Slurp(shard);
  bytes[bytes.size() - 6] ^= 0x40;  // inside the second record's data
  std::ofstream(shard, std::ios::binary) << bytes;
  Result r = Run("inspect r/part-00000-of-00001.tfrecord");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("part-00000-of-00001.tfrecord"));
  EXPECT_THAT(r.err, HasSubstr("offset"));
}

TEST_F(CliTest, MissingInputNamesIt) {
  Write("schema.toml", kSchema);
  Result r = Run("gen-records --schema schema.toml --out r nope.csv");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("nope.csv"));
  EXPECT_FALSE(fs::exists(dir_ / "r"));
}

TEST_F(CliTest, BinaryInputIsRefusedByEveryCsvCommand) {
  Write("schema.toml", kSchema);
  Write("in.csv", std::string("\x1f\x8b\x08\0\0\0\0\0\0\x03a,b\n", 14));
  const std::string expected =
      "in.csv: looks like a binary file, not CSV (NUL byte at line 1, column "
      "4)";
  Result r = Run("gen-records --schema schema.toml --out r in.csv");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(expected));
  EXPECT_FALSE(fs::exists(dir_ / "r"));
  r = Run("gen-records --infer --out r in.csv");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(expected));
  EXPECT_FALSE(fs::exists(dir_ / "r"));
  r = Run("init job --from-csv in.csv --label b");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(expected));
  EXPECT_FALSE(fs::exists(dir_ / "job"));
}

TEST_F(CliTest, CsvTextErrorsNameTheirPlace) {
  Write("bad_name.csv", "id,sco\xffre\n1,2\n");
  Result r = Run("init job --from-csv bad_name.csv --label id");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("bad_name.csv:1:7: column name"));
  EXPECT_FALSE(fs::exists(dir_ / "job"));
  r = Run("gen-records --infer --out r bad_name.csv");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("bad_name.csv:1:7: column name"));
  EXPECT_FALSE(fs::exists(dir_ / "r"));

  Write("extra.csv", "a,b,c\n1,2,3\n4,5,6,7\n");
  r = Run("gen-records --infer --out r extra.csv");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("extra.csv:3:7: row has 4 fields, the header "
                               "has 3"));
  EXPECT_THAT(r.err, Not(HasSubstr("column_4")));
  EXPECT_FALSE(fs::exists(dir_ / "r"));
  r = Run("init job --from-csv extra.csv --label c");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("extra.csv:3:7: row has 4 fields, the header "
                               "has 3"));

  Write("latin1.csv", "n,city\n1,Z\xfcrich\n");
  r = Run("init job --from-csv latin1.csv --label n");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("latin1.csv:2:4: column \"city\""));
  EXPECT_FALSE(fs::exists(dir_ / "job"));
}

TEST_F(CliTest, ColourOnlyOnATerminalAndNeverWithNoColor) {
  // Not a terminal: plain text.
  EXPECT_THAT(Run("inspect missing.tfrecord").err, Not(HasSubstr("\033[")));
  if (std::system("command -v script >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "script(1) is not installed; no pseudo-terminal to test";
  }
  // script(1) gives dtf a pseudo-terminal; its output lands in out.txt.
  auto on_tty = [&](const std::string& env) {
    std::string inner =
        env + " '" + std::string(DTF_BINARY) + "' inspect missing.tfrecord";
    Run("", "");  // resets out.txt
    std::string cmd = "cd '" + dir_.string() + "' && script -qec \"" + inner +
                      "\" /dev/null > tty.txt 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()) == -1, false);
    return Slurp(dir_ / "tty.txt");
  };
  EXPECT_THAT(on_tty("TERM=xterm"), HasSubstr("\033["));
  EXPECT_THAT(on_tty("TERM=xterm NO_COLOR=1"), Not(HasSubstr("\033[")));
}

const std::string kTitanic =
    std::string(DTF_SHARED_DIR) + "/data/titanic/train.csv";

// The names in dir_ besides the test's own out.txt and err.txt, hidden ones
// included.
std::vector<std::string> Left(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    if (name != "out.txt" && name != "err.txt") names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST_F(CliTest, InitWithoutCsvWritesAJobThatGenRecordsReads) {
  Result r = Run("init demo");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("  dtf.toml\n"));
  EXPECT_THAT(r.out, HasSubstr("  data/train.csv\n"));
  EXPECT_THAT(r.out, HasSubstr("  profiles/local.toml\n"));
  EXPECT_THAT(r.out, HasSubstr("cd demo && dtf gen-records --job dtf.toml && "
                               "dtf train --job dtf.toml\n"));
  Result gen = Run("gen-records --job demo/dtf.toml");
  EXPECT_EQ(gen.code, 0) << gen.err;
  EXPECT_TRUE(fs::exists(dir_ / "demo/records/train"));
  EXPECT_TRUE(fs::exists(dir_ / "demo/records/eval"));
}

TEST_F(CliTest, InitFromTitanicCsvWritesAJobThatGenRecordsReads) {
  Result r = Run("init titanic --from-csv '" + kTitanic + "' --label Survived");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("  dtf.toml\n"));
  EXPECT_THAT(r.out, Not(HasSubstr("data/train.csv")));
  EXPECT_THAT(r.out, HasSubstr("cd titanic && dtf gen-records"));
  EXPECT_THAT(Slurp(dir_ / "titanic/dtf.toml"), HasSubstr("\"Survived\""));
  Result gen = Run("gen-records --job titanic/dtf.toml");
  EXPECT_EQ(gen.code, 0) << gen.err;
  EXPECT_THAT(gen.err, HasSubstr("891 rows"));
  EXPECT_TRUE(fs::exists(dir_ / "titanic/records/train"));
  EXPECT_TRUE(fs::exists(dir_ / "titanic/records/eval"));
}

TEST_F(CliTest, InitFromCsvWithoutLabelIsAUsageError) {
  Result r = Run("init job --from-csv '" + kTitanic + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--label"));
  EXPECT_THAT(Left(dir_), ::testing::IsEmpty());
}

TEST_F(CliTest, InitLabelWithoutCsvIsAUsageError) {
  Result r = Run("init job --label Survived");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--from-csv"));
  EXPECT_THAT(Left(dir_), ::testing::IsEmpty());
}

TEST_F(CliTest, InitUnknownLabelNamesTheColumnAndTheFileAndLeavesNothing) {
  Result r = Run("init a/job --from-csv '" + kTitanic + "' --label Survivd");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("\"Survivd\""));
  EXPECT_THAT(r.err, HasSubstr("titanic/train.csv"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  // Neither the job directory, nor its parent, nor a staging directory.
  EXPECT_THAT(Left(dir_), ::testing::IsEmpty());
}

TEST_F(CliTest, InitMissingCsvNamesItAndLeavesNothing) {
  Result r = Run("init job --from-csv nope.csv --label x");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("nope.csv"));
  EXPECT_THAT(Left(dir_), ::testing::IsEmpty());
}

TEST_F(CliTest, InitRefusesANonEmptyDirectory) {
  fs::create_directory(dir_ / "full");
  Write("full/keep", "x");
  Result r = Run("init full");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("full: exists and is not empty"));
  EXPECT_THAT(Left(dir_ / "full"), ::testing::ElementsAre("keep"));
}

// 400 rows a data scientist meets: a ';' file with an id, NA spellings,
// currency, percent signs, decimal commas and mixed true/false spellings.
std::string MessyCsv() {
  using dtf::StrCat;
  std::string csv = "user_id;age;price;share;weight;member;city;label\n";
  const char* members[] = {"yes", "No", "Y", "n", "TRUE", "false"};
  for (int i = 0; i < 400; ++i) {
    csv += StrCat(5000 + i, ";", i % 13 == 0 ? "NA" : StrCat(18 + i % 60), ";",
                  "$", 1 + i % 9, ",", 100 + i % 900, ";", i % 100, ".5%;",
                  i % 80, ",", i % 10, ";", members[i % 6], ";",
                  i % 3 ? "Paris" : "Lyon", ";", i % 2, "\n");
  }
  return csv;
}

TEST_F(CliTest, InitReadsAMessyCsvAndPrintsItsDecisions) {
  Write("in.csv", MessyCsv());
  Result r = Run("init job --from-csv in.csv --label label");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Read in.csv: 400 rows, 8 columns, delimiter "
                               "';' (detected)\n"));
  EXPECT_THAT(r.out, HasSubstr("Label \"label\": binary, 2 classes\n"));
  EXPECT_THAT(r.out, HasSubstr("  0                       200   50.0%\n"));
  EXPECT_THAT(r.out, HasSubstr("  user_id  int    none             identifier: "
                               "named like one, 100% of values distinct\n"));
  EXPECT_THAT(r.out, HasSubstr("  age      int    numeric+buckets  NA read as "
                               "missing\n"));
  EXPECT_THAT(r.out, HasSubstr("  price    int    numeric+buckets  read "
                               "\"$1,100\" as 1100"));
  EXPECT_THAT(r.out, HasSubstr("  share    float  numeric+buckets  read "
                               "\"0.5%\" as 0.5"));
  EXPECT_THAT(r.out, HasSubstr("  weight   float  numeric+buckets  decimal "
                               "comma: read \"0,0\" as 0\n"));
  EXPECT_THAT(r.out, HasSubstr("  member   int    numeric          true/false "
                               "spellings (N"));
  EXPECT_THAT(r.out, HasSubstr("  city     str    categorical"));
  const std::string toml = Slurp(dir_ / "job/dtf.toml");
  EXPECT_THAT(toml, HasSubstr("delimiter = \";\""));
  EXPECT_THAT(toml, HasSubstr("missing = [\"?\", \"NA\"]"));
  Result gen = Run("gen-records --job job/dtf.toml");
  EXPECT_EQ(gen.code, 0) << gen.err;
  EXPECT_THAT(gen.err, HasSubstr("400 rows"));
}

TEST_F(CliTest, InitJsonPrintsTheDecisions) {
  Write("in.csv", MessyCsv());
  Result r = Run("init job --from-csv in.csv --label label --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("{\"dir\": \"job\", \"train_csv\": \"in.csv\", "
                        "\"rows\": 400, \"delimiter\": \";\", "
                        "\"delimiter_detected\": true, \"missing\": [\"?\", "
                        "\"NA\"], \"label\": {\"column\": \"label\", \"task\": "
                        "\"binary\", \"rows\": 400, \"classes\": "
                        "[{\"value\": \"0\", \"count\": 200, \"percent\": "
                        "50.00}, ",
                        0),
            0u)
      << r.out;
  EXPECT_THAT(r.out, HasSubstr("{\"name\": \"price\", \"type\": \"int\", "
                               "\"format\": \"number\", \"feature\": "
                               "\"numeric+buckets\", \"why\": \"\", "));
  EXPECT_THAT(r.out, HasSubstr("{\"name\": \"user_id\", \"type\": \"int\", "
                               "\"format\": \"plain\", \"feature\": \"none\", "
                               "\"why\": \"identifier: named like one, 100% "
                               "of values distinct\""));
  EXPECT_EQ(r.out.find("Created"), std::string::npos);
}

TEST_F(CliTest, InitRefusesDuplicateHeaderNames) {
  Write("in.csv", "a,label,a\n1,0,2\n");
  Result r = Run("init job --from-csv in.csv --label label");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("in.csv:1:9: duplicate column \"a\" (also at "
                               "in.csv:1:1)"));
  EXPECT_THAT(Left(dir_), ::testing::ElementsAre("in.csv"));
}

TEST_F(CliTest, InitRefusesAnEvalCsvWithAnotherHeader) {
  Write("in.csv", "a,b,label\n1,2,0\n3,4,1\n");
  Write("ev.csv", "a,B,label\n1,2,0\n");
  Result r = Run("init job --from-csv in.csv --eval-csv ev.csv --label label");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("ev.csv:1:3: column 2 is \"B\" but in "
                               "in.csv:1:3 it is \"b\""));
}

TEST_F(CliTest, InitWithTheWrongDelimiterSaysWhichOneFits) {
  Write("in.csv", "age;label\n1;0\n2;1\n");
  Result r = Run("init job --from-csv in.csv --label label --delimiter ,");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("in.csv:1: the header is one column, "
                               "\"age;label\", which holds ';': the fields "
                               "are not separated by ','; give --delimiter "
                               "';'"));
}

TEST_F(CliTest, InitRefusesRowsWithoutALabel) {
  Write("in.csv", "x,label\n1,0\n2,\n3,NaN\n");
  Result r = Run("init job --from-csv in.csv --label label");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("in.csv:3: no label: column \"label\" is "
                               "missing on this row (2 rows in all)"));
}

TEST_F(CliTest, GenRecordsInferDetectsTheDelimiter) {
  Write("in.csv", "age;income;color;label\n30;1.5;red;0\n40;2.5;blue;1\n");
  Result r = Run("gen-records --infer --out rec --schema-out s.toml in.csv");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string schema = Slurp(dir_ / "s.toml");
  EXPECT_THAT(schema, HasSubstr("\"age:int\""));
  EXPECT_THAT(schema, HasSubstr("\"income:float\""));
  EXPECT_THAT(schema, HasSubstr("\"label:int\""));
  Write("t.tsv", "a\tb\n1\tx\n");
  r = Run("gen-records --infer --out rec2 --schema-out t.toml t.tsv");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(Slurp(dir_ / "t.toml"), HasSubstr("\"b:str\""));
  r = Run("gen-records --infer --out rec3 --delimiter , in.csv");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("in.csv:1: the header is one column, "
                               "\"age;income;color;label\""));
  EXPECT_FALSE(fs::exists(dir_ / "rec3"));
}

// A cluster without parameter servers is for mode = "allreduce" only: a
// sync job is refused naming its mode (an allreduce job, on the CPU too,
// goes on to serve: tests/e2e/launch_allreduce.sh).
TEST_F(CliTest, ServeWithoutParameterServersNeedsAnAllreduceJob) {
  std::string job =
      Slurp(fs::path(DTF_SOURCE_DIR) / "examples" / "titanic" / "dtf.toml");
  const std::string from = "../../../shared";
  for (size_t at = job.find(from); at != std::string::npos;
       at = job.find(from)) {
    job.replace(at, from.size(), DTF_SHARED_DIR);
  }
  Write("dtf.toml", job);
  Write("secret", "00112233445566778899aabbccddeeff\n");
  fs::permissions(dir_ / "secret",
                  fs::perms::owner_read | fs::perms::owner_write);
  Result r =
      Run("serve --job dtf.toml --role worker --index 0 --ps '' --workers "
          "127.0.0.1:1 --secret-file secret --run-id r1");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("the cluster has no ps tasks, which only mode "
                               "= \"allreduce\" runs without"));
  EXPECT_THAT(r.err, HasSubstr("has mode = \"sync\""));
}

}  // namespace
