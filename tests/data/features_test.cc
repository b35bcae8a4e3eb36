#include "lib/data/features.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/data/job_file.h"
#include "tests/data/job_file_testing.h"

namespace dtf {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// 8 lines, so that [features] tables start on line 9.
constexpr char kSchema[] = R"([schema]
label = "y"
columns = [
  "y:int", "age:float=-1", "n:int", "sex:str", "city:str", "px1:float",
  "px2:float", { name = "gone", type = "int", skip = true },
]
vectors = [{ name = "px", columns = ["px1", "px2"] }]

)";

class FeatureSpecTest : public JobFileFixture {
 protected:
  // The features of a job file of kSchema and `features`.
  FeatureSpec Load(const std::string& features) {
    StatusOr<JobFile> job = LoadText(kSchema + features);
    EXPECT_TRUE(job.ok()) << job.status();
    return job.ok() ? job->features : FeatureSpec();
  }

  // The message for kSchema and `features`, without the directory.
  std::string Error(const std::string& features) {
    return LoadError(kSchema + features);
  }
};

TEST_F(FeatureSpecTest, EveryKind) {
  const FeatureSpec spec = Load(R"([[features.numeric]]
name = "age"
normalize = true
default = 30
wide = true
[[features.numeric]]
name = "pixels"
source = "px"
deep = true
[[features.categorical]]
name = "sex_ids"
source = "sex"
vocabulary = ["male", "female", ""]
num_oov_buckets = 2
embedding = 4
combiner = "sum"
wide = true
[[features.hashed]]
name = "city"
buckets = 100
embedding = 8
[[features.bucketized]]
name = "age_b"
source = "age"
boundaries = [10, 20.5, 30]
[[features.crossed]]
name = "x"
columns = ["age_b", "sex_ids", "city", "n"]
buckets = 50
embedding = 3
)");
  ASSERT_EQ(spec.numeric.size(), 2u);
  const NumericFeature& age = spec.numeric[0];
  EXPECT_EQ(age.name, "age");
  EXPECT_EQ(age.source, "age");
  EXPECT_EQ(age.source_kind, InputKind::kColumn);
  EXPECT_EQ(age.source_type, ValueType::kFloat);
  EXPECT_EQ(age.dimension, 1);
  EXPECT_TRUE(age.normalize);
  EXPECT_EQ(age.default_value, 30.0);
  EXPECT_TRUE(age.deep);
  EXPECT_TRUE(age.wide);
  const NumericFeature& pixels = spec.numeric[1];
  EXPECT_EQ(pixels.source_kind, InputKind::kVector);
  EXPECT_EQ(pixels.dimension, 2);
  EXPECT_FALSE(pixels.default_value.has_value());

  ASSERT_EQ(spec.categorical.size(), 1u);
  const CategoricalFeature& sex = spec.categorical[0];
  EXPECT_EQ(sex.source, "sex");
  EXPECT_EQ(sex.source_type, ValueType::kString);
  EXPECT_THAT(sex.vocabulary, ElementsAre("male", "female", ""));
  EXPECT_EQ(sex.vocabulary_file, "");
  EXPECT_EQ(sex.num_oov_buckets, 2);
  EXPECT_EQ(sex.num_ids(), 5);
  EXPECT_EQ(sex.embedding, 4);
  EXPECT_EQ(sex.combiner, Combiner::kSum);
  EXPECT_TRUE(sex.wide);

  ASSERT_EQ(spec.hashed.size(), 1u);
  EXPECT_EQ(spec.hashed[0].buckets, 100);
  EXPECT_EQ(spec.hashed[0].num_ids(), 100);
  EXPECT_FALSE(spec.hashed[0].wide);  // an embedding turns wide off
  EXPECT_EQ(spec.hashed[0].combiner, Combiner::kMean);

  ASSERT_EQ(spec.bucketized.size(), 1u);
  const BucketizedFeature& age_b = spec.bucketized[0];
  EXPECT_EQ(age_b.source_kind, InputKind::kFeature);  // the numeric "age"
  EXPECT_THAT(age_b.boundaries, ElementsAre(10, 20.5, 30));
  EXPECT_EQ(age_b.num_ids(), 4);
  EXPECT_EQ(age_b.embedding, 0);
  EXPECT_TRUE(age_b.wide);  // no embedding: wide by default

  ASSERT_EQ(spec.crossed.size(), 1u);
  const CrossedFeature& x = spec.crossed[0];
  ASSERT_EQ(x.columns.size(), 4u);
  EXPECT_EQ(x.columns[0].kind, InputKind::kFeature);
  EXPECT_EQ(x.columns[1].kind, InputKind::kFeature);
  EXPECT_EQ(x.columns[2].kind, InputKind::kFeature);  // the hashed "city"
  EXPECT_EQ(x.columns[3].name, "n");
  EXPECT_EQ(x.columns[3].kind, InputKind::kColumn);
  EXPECT_EQ(x.num_ids(), 50);

  EXPECT_EQ(spec.size(), 6u);
  const auto ref = spec.Find("age_b");
  ASSERT_TRUE(ref.has_value());
  EXPECT_EQ(ref->kind, FeatureKind::kBucketized);
  EXPECT_EQ(ref->index, 0u);
  EXPECT_TRUE(spec.FeedsWide(*ref));
  EXPECT_FALSE(spec.FeedsDeep(*ref));
  EXPECT_TRUE(spec.FeedsDeep(*spec.Find("city")));
  EXPECT_FALSE(spec.Find("sex").has_value());  // a column, not a feature
  EXPECT_EQ(spec.Use(*spec.Find("age")), nullptr);
  EXPECT_EQ(spec.Use(*spec.Find("x"))->embedding, 3);
}

TEST_F(FeatureSpecTest, BucketizedReadsAColumnWithoutANumericFeature) {
  const FeatureSpec spec = Load(R"([[features.bucketized]]
name = "n_b"
source = "n"
boundaries = [0]
[[features.categorical]]
name = "age"
source = "sex"
vocabulary = ["a"]
[[features.bucketized]]
name = "age_b"
source = "age"
boundaries = [1]
)");
  EXPECT_EQ(spec.bucketized[0].source_kind, InputKind::kColumn);
  // A categorical feature named "age" does not shadow the column.
  EXPECT_EQ(spec.bucketized[1].source_kind, InputKind::kColumn);
}

TEST_F(FeatureSpecTest, IntVocabularies) {
  const FeatureSpec spec = Load(R"([[features.categorical]]
name = "n"
vocabulary = [3, "-1", "+007", 9223372036854775807]
)");
  EXPECT_EQ(spec.categorical[0].source_type, ValueType::kInt);
  EXPECT_THAT(spec.categorical[0].vocabulary,
              ElementsAre("3", "-1", "7", "9223372036854775807"));
  EXPECT_EQ(Error("[[features.categorical]]\nname = \"n\"\n"
                  "vocabulary = [1, \"x\"]\n"),
            "job.toml:11:18: features.categorical[0].vocabulary[1]: expected "
            "an int, got \"x\"");
  EXPECT_EQ(Error("[[features.categorical]]\nname = \"n\"\n"
                  "vocabulary = [1, \"01\"]\n"),
            "job.toml:11:18: features.categorical[0].vocabulary[1]: \"1\" is "
            "listed twice (entry 1)");
  EXPECT_EQ(Error("[[features.categorical]]\nname = \"sex\"\n"
                  "vocabulary = [\"a\", 1]\n"),
            "job.toml:11:20: features.categorical[0].vocabulary[1]: expected "
            "a string, got an integer");
}

TEST_F(FeatureSpecTest, VocabularyFile) {
  Write("sex.txt", "male\r\nfemale\n");
  Write("n.txt", "1\n2\n");
  const FeatureSpec spec = Load(R"([[features.categorical]]
name = "sex"
vocabulary_file = "sex.txt"
[[features.categorical]]
name = "n"
vocabulary_file = "n.txt"
)");
  EXPECT_THAT(spec.categorical[0].vocabulary, ElementsAre("male", "female"));
  EXPECT_EQ(spec.categorical[0].vocabulary_file, dir_ + "/sex.txt");
  EXPECT_THAT(spec.categorical[1].vocabulary, ElementsAre("1", "2"));

  const std::string head = "[[features.categorical]]\nname = \"sex\"\n";
  Write("dup.txt", "a\nb\na\n");
  EXPECT_EQ(Error(head + "vocabulary_file = \"dup.txt\"\n"),
            "job.toml:11:19: features.categorical[0].vocabulary_file: " + dir_ +
                "/dup.txt:3: \"a\" is listed twice (entry 1)");
  Write("blank.txt", "a\n\nb\n");
  EXPECT_THAT(Error(head + "vocabulary_file = \"blank.txt\"\n"),
              HasSubstr("/blank.txt:2: empty line"));
  Write("empty.txt", "");
  EXPECT_THAT(Error(head + "vocabulary_file = \"empty.txt\"\n"),
              HasSubstr("/empty.txt: empty vocabulary"));
  EXPECT_THAT(Error(head + "vocabulary_file = \"none.txt\"\n"),
              HasSubstr("features.categorical[0].vocabulary_file: " + dir_ +
                        "/none.txt"));
  Write("bad.txt", "1\nx\n");
  EXPECT_THAT(Error("[[features.categorical]]\nname = \"n\"\n"
                    "vocabulary_file = \"bad.txt\"\n"),
              HasSubstr("/bad.txt:2: expected an int, got \"x\""));
  EXPECT_EQ(Error(head + "vocabulary = [\"a\"]\nvocabulary_file = \"x\"\n"),
            "job.toml:12:19: features.categorical[0].vocabulary_file: give "
            "vocabulary or vocabulary_file, not both");
  EXPECT_EQ(Error(head),
            "job.toml:9:1: features.categorical[0].vocabulary: missing (a "
            "list, or vocabulary_file)");
  EXPECT_EQ(Error(head + "vocabulary = []\n"),
            "job.toml:11:14: features.categorical[0].vocabulary: expected a "
            "non-empty list, got an array");
}

TEST_F(FeatureSpecTest, KeyErrors) {
  EXPECT_EQ(Error("[features]\nnumerics = []\n"),
            "job.toml:10:1: features.numerics: unknown key (did you mean "
            "numeric?)");
  EXPECT_EQ(Error("[features.numeric]\nname = \"n\"\n"),
            "job.toml:9:1: features.numeric: expected an array of tables "
            "([[features.numeric]]), got a table");
  EXPECT_EQ(Error("[features]\nhashed = [1]\n"),
            "job.toml:10:11: features.hashed[0]: expected a table, got an "
            "integer");
  EXPECT_EQ(Error("[[features.hashed]]\nname = \"city\"\nbuckets = 3\n"
                  "embeding = 2\n"),
            "job.toml:12:1: features.hashed[0].embeding: unknown key (did you "
            "mean embedding?)");
  EXPECT_EQ(Error("[[features.hashed]]\nname = \"city\"\nbuckets = 3\n"
                  "deep = true\n"),
            "job.toml:12:8: features.hashed[0].deep: unknown key: a "
            "categorical feature feeds the deep part through its embedding "
            "(embedding = N)");
  EXPECT_EQ(Error("[[features.numeric]]\nsource = \"n\"\n"),
            "job.toml:9:1: features.numeric[0].name: missing");
  EXPECT_EQ(Error("[[features.numeric]]\nname = \"\"\n"),
            "job.toml:10:8: features.numeric[0].name: empty name");
  EXPECT_EQ(Error("[[features.numeric]]\nname = \"n\"\n"
                  "[[features.hashed]]\nname = \"n\"\nbuckets = 2\n"),
            "job.toml:12:8: features.hashed[0].name: duplicate feature name "
            "\"n\" (features.numeric[0], line 9)");
  EXPECT_EQ(Error("[[features.numeric]]\nname = \"n\"\nnormalize = 1\n"),
            "job.toml:11:13: features.numeric[0].normalize: expected true or "
            "false, got 1");
  EXPECT_EQ(Error("[[features.numeric]]\nname = \"n\"\ndefault = nan\n"),
            "job.toml:11:11: features.numeric[0].default: must be finite, got "
            "nan");
  EXPECT_EQ(Error("[[features.hashed]]\nname = \"city\"\nbuckets = 3\n"
                  "embedding = -1\n"),
            "job.toml:12:13: features.hashed[0].embedding: must be at least 0, "
            "got -1");
  EXPECT_EQ(
      Error("[[features.hashed]]\nname = \"city\"\nbuckets = 3\n"
            "embedding = 2\ncombiner = \"max\"\n"),
      "job.toml:13:12: features.hashed[0].combiner: unknown value \"max\" "
      "(did you mean mean?)");
  EXPECT_EQ(Error("[[features.hashed]]\nname = \"city\"\nbuckets = 3\n"
                  "combiner = \"sum\"\n"),
            "job.toml:12:12: features.hashed[0].combiner: only with an "
            "embedding (embedding > 0)");
}

TEST_F(FeatureSpecTest, SourceErrors) {
  EXPECT_EQ(Error("[[features.numeric]]\nname = \"agee\"\n"),
            "job.toml:10:8: features.numeric[0].source: no column \"agee\" in "
            "[schema] (did you mean \"age\"?)");
  EXPECT_EQ(Error("[[features.numeric]]\nname = \"a\"\nsource = \"zzzzz\"\n"),
            "job.toml:11:10: features.numeric[0].source: no column \"zzzzz\" "
            "in [schema]");
  EXPECT_EQ(Error("[[features.numeric]]\nname = \"sex\"\n"),
            "job.toml:10:8: features.numeric[0].source: column \"sex\" is a "
            "str; this feature takes an int or float column, or a vector");
  EXPECT_EQ(Error("[[features.hashed]]\nname = \"age\"\nbuckets = 2\n"),
            "job.toml:10:8: features.hashed[0].source: column \"age\" is a "
            "float; this feature takes a str or int column");
  EXPECT_EQ(Error("[[features.numeric]]\nname = \"gone\"\n"),
            "job.toml:10:8: features.numeric[0].source: column \"gone\" is "
            "skipped (skip = true), so the records lack it");
  EXPECT_EQ(Error("[[features.numeric]]\nname = \"px1\"\n"),
            "job.toml:10:8: features.numeric[0].source: column \"px1\" is "
            "written only as part of the vector \"px\"");
  EXPECT_EQ(Error("[[features.numeric]]\nname = \"y\"\n"),
            "job.toml:10:8: features.numeric[0].source: column \"y\" is the "
            "label");
  EXPECT_EQ(Error("[[features.hashed]]\nname = \"px\"\nbuckets = 2\n"),
            "job.toml:10:8: features.hashed[0].source: \"px\" is a vector; "
            "this feature takes a str or int column");
}

TEST_F(FeatureSpecTest, BucketizedErrors) {
  const std::string head = "[[features.bucketized]]\nname = \"b\"\n";
  EXPECT_EQ(Error(head + "source = \"age\"\n"),
            "job.toml:9:1: features.bucketized[0].boundaries: missing");
  EXPECT_EQ(Error(head + "source = \"age\"\nboundaries = [1, 3, 3]\n"),
            "job.toml:12:21: features.bucketized[0].boundaries[2]: boundaries "
            "must be strictly increasing: 3 after 3");
  EXPECT_EQ(Error(head + "source = \"age\"\nboundaries = []\n"),
            "job.toml:12:14: features.bucketized[0].boundaries: expected a "
            "non-empty list of numbers, got an array");
  EXPECT_EQ(Error(head + "source = \"age\"\nboundaries = [1, \"2\"]\n"),
            "job.toml:12:18: features.bucketized[0].boundaries[1]: expected a "
            "number, got \"2\"");
  EXPECT_EQ(Error(head + "source = \"sex\"\nboundaries = [1]\n"),
            "job.toml:11:10: features.bucketized[0].source: column \"sex\" is "
            "a str; this feature takes a numeric feature or an int or float "
            "column");
  EXPECT_EQ(Error("[[features.numeric]]\nname = \"p\"\nsource = \"px\"\n" +
                  head + "source = \"p\"\nboundaries = [1]\n"),
            "job.toml:14:10: features.bucketized[0].source: numeric feature "
            "\"p\" holds a vector; bucketize a single column");
}

TEST_F(FeatureSpecTest, CrossedErrors) {
  const std::string head = "[[features.crossed]]\nname = \"x\"\nbuckets = 4\n";
  EXPECT_EQ(Error(head + "columns = [\"sex\"]\n"),
            "job.toml:12:11: features.crossed[0].columns: expected a list of "
            "at least two names, got an array");
  EXPECT_EQ(Error(head + "columns = [\"sex\", \"sex\"]\n"),
            "job.toml:12:19: features.crossed[0].columns[1]: \"sex\" is listed "
            "twice");
  EXPECT_EQ(Error(head + "columns = [\"sex\", \"x\"]\n"),
            "job.toml:12:19: features.crossed[0].columns[1]: a cross cannot "
            "use itself");
  EXPECT_EQ(Error(head + "columns = [\"sex\", \"age\"]\n"),
            "job.toml:12:19: features.crossed[0].columns[1]: column \"age\" is "
            "a float; this feature takes a categorical, hashed or bucketized "
            "feature, or a str or int column");
  EXPECT_EQ(Error("[[features.numeric]]\nname = \"a\"\nsource = \"age\"\n" +
                  head + "columns = [\"sex\", \"a\"]\n"),
            "job.toml:15:19: features.crossed[0].columns[1]: \"a\" is a "
            "numeric feature; cross a bucketized feature of it");
  EXPECT_EQ(Error(head + "columns = [\"sex\", \"city\"]\n" +
                  "[[features.crossed]]\nname = \"y2\"\nbuckets = 4\n"
                  "columns = [\"sex\", \"x\"]\n"),
            "job.toml:16:19: features.crossed[1].columns[1]: \"x\" is a "
            "crossed feature; list its columns instead");
  EXPECT_EQ(Error("[[features.crossed]]\nname = \"x\"\n"
                  "columns = [\"sex\", \"city\"]\n"),
            "job.toml:9:1: features.crossed[0].buckets: missing");
  EXPECT_EQ(Error(head.substr(0, head.size() - 12) + "buckets = 0\n" +
                  "columns = [\"sex\", \"city\"]\n"),
            "job.toml:11:11: features.crossed[0].buckets: must be at least 1, "
            "got 0");
}

TEST_F(FeatureSpecTest, DateAndText) {
  const FeatureSpec spec = Load(R"([[features.date]]
name = "when"
source = "city"
format = "iso8601"
parts = ["hour", "month"]
default = "2024-03-05T10:00:00Z"
embedding = 2
[[features.text]]
name = "words"
source = "sex"
buckets = 64
)");
  ASSERT_EQ(spec.date.size(), 1u);
  const DateFeature& d = spec.date[0];
  EXPECT_EQ(d.source, "city");
  EXPECT_EQ(d.format, DateFormat::kIso);
  EXPECT_THAT(d.parts, ElementsAre(DatePart::kMonth, DatePart::kHour));
  EXPECT_EQ(d.default_value, "2024-03-05T10:00:00Z");
  EXPECT_EQ(d.embedding, 2);
  EXPECT_FALSE(d.wide);
  ASSERT_EQ(spec.text.size(), 1u);
  const TextFeature& t = spec.text[0];
  EXPECT_EQ(t.buckets, 64);
  EXPECT_EQ(t.num_ids(), 64);
  EXPECT_EQ(t.ngrams, 2);
  EXPECT_TRUE(t.wide);
  EXPECT_EQ(t.combiner, Combiner::kMean);
  const std::optional<FeatureSpec::Ref> ref = spec.Find("words");
  ASSERT_TRUE(ref.has_value());
  EXPECT_EQ(ref->kind, FeatureKind::kText);
  EXPECT_TRUE(spec.FeedsWide(*ref));
  EXPECT_FALSE(spec.FeedsDeep(*ref));
  EXPECT_TRUE(spec.FeedsDeep(*spec.Find("when")));
  EXPECT_EQ(spec.size(), 2u);
}

TEST_F(FeatureSpecTest, DateAndTextErrors) {
  EXPECT_EQ(Error("[[features.date]]\nname = \"age\"\n"),
            "job.toml:10:8: features.date[0].source: column \"age\" is a "
            "float; this feature takes a str column");
  EXPECT_EQ(Error("[[features.date]]\nname = \"city\"\nformat = \"iso\"\n"),
            "job.toml:11:10: features.date[0].format: expected one of auto, "
            "iso8601, ymd, mdy, dmy, compact, got \"iso\"");
  EXPECT_EQ(Error("[[features.date]]\nname = \"city\"\nparts = []\n"),
            "job.toml:11:9: features.date[0].parts: expected a non-empty list "
            "of parts, got an array");
  EXPECT_EQ(
      Error("[[features.date]]\nname = \"city\"\nparts = [\"day\", \"day\"]\n"),
      "job.toml:11:17: features.date[0].parts[1]: \"day\" is listed twice");
  EXPECT_THAT(
      Error("[[features.date]]\nname = \"city\"\nparts = [\"minute\"]\n"),
      HasSubstr("job.toml:11:10: features.date[0].parts[0]: expected "
                "one of year, month, day, weekday, hour, epoch_days, "
                "got \"minute\""));
  EXPECT_EQ(Error("[[features.date]]\nname = \"city\"\ndefault = "
                  "\"2024-02-30\"\n"),
            "job.toml:11:11: features.date[0].default: \"2024-02-30\" is not a "
            "date: day 30 is not in 1..29 for 2024-02");
  EXPECT_EQ(Error("[[features.date]]\nname = \"city\"\nformat = \"mdy\"\n"
                  "default = \"2024-02-01\"\n"),
            "job.toml:12:11: features.date[0].default: \"2024-02-01\" is not a "
            "date in format \"mdy\"");
  EXPECT_EQ(Error("[[features.date]]\nname = \"city\"\ncombiner = \"sum\"\n"),
            "job.toml:11:1: features.date[0].combiner: unknown key (expected "
            "one of name, source, format, parts, default, embedding, wide)");
  EXPECT_EQ(Error("[[features.date]]\nname = \"city\"\nwide = false\n"),
            "job.toml:9:1: features.date[0]: feeds nothing: set wide = true or "
            "an embedding size");
  EXPECT_EQ(Error("[[features.date]]\nname = \"c\"\nsource = \"city\"\n"
                  "[[features.hashed]]\nname = \"c/month\"\nsource = "
                  "\"sex\"\nbuckets = 2\n"),
            "job.toml:13:8: features.hashed[0].name: \"c/month\" is the name "
            "of a part of date feature \"c\"; rename one");

  EXPECT_EQ(Error("[[features.text]]\nname = \"n\"\nbuckets = 5\n"),
            "job.toml:10:8: features.text[0].source: column \"n\" is an int; "
            "this feature takes a str column");
  EXPECT_EQ(Error("[[features.text]]\nname = \"city\"\n"),
            "job.toml:9:1: features.text[0].buckets: missing");
  EXPECT_EQ(Error("[[features.text]]\nname = \"city\"\nbuckets = 5\n"
                  "ngrams = 3\n"),
            "job.toml:12:10: features.text[0].ngrams: must be 1 (words) or 2 "
            "(words and bigrams), got 3");
  EXPECT_EQ(Error("[[features.text]]\nname = \"city\"\nbuckets = 5\n"
                  "deep = true\n"),
            "job.toml:12:8: features.text[0].deep: unknown key: a categorical "
            "feature feeds the deep part through its embedding (embedding = "
            "N)");
  // A crossed feature does not take a text feature.
  EXPECT_THAT(Error("[[features.crossed]]\nname = \"x\"\ncolumns = "
                    "[\"sex\", \"words\"]\nbuckets = 4\n"
                    "[[features.text]]\nname = \"words\"\nsource = "
                    "\"city\"\nbuckets = 5\n"),
              HasSubstr("features.crossed[0].columns[1]: no column "
                        "\"words\" in [schema]"));
}

TEST_F(FeatureSpecTest, EveryFeatureFeedsSomething) {
  EXPECT_EQ(Error("[[features.numeric]]\nname = \"n\"\ndeep = false\n"),
            "job.toml:9:1: features.numeric[0]: feeds nothing: deep and wide "
            "are false and no bucketized feature uses it");
  EXPECT_EQ(Error("[[features.hashed]]\nname = \"city\"\nbuckets = 2\n"
                  "wide = false\n"),
            "job.toml:9:1: features.hashed[0]: feeds nothing: set wide = true "
            "or an embedding size, or use it in a crossed feature");
  // Inputs of other features need not feed anything themselves.
  const FeatureSpec spec = Load(R"([[features.numeric]]
name = "age"
deep = false
[[features.categorical]]
name = "sex"
vocabulary = ["m", "f"]
wide = false
[[features.bucketized]]
name = "age_b"
source = "age"
boundaries = [1]
wide = false
[[features.crossed]]
name = "x"
columns = ["age_b", "sex"]
buckets = 10
)");
  EXPECT_EQ(spec.size(), 4u);
}

TEST_F(FeatureSpecTest, SizesOverTheCapsAreRefused) {
  EXPECT_EQ(Error("[[features.hashed]]\nname = \"city\"\n"
                  "buckets = 16777217\n"),
            "job.toml:11:11: features.hashed[0].buckets: must be at most "
            "16777216 (dtf's limit), got 16777217");
  EXPECT_EQ(Error("[[features.hashed]]\nname = \"city\"\nbuckets = 3\n"
                  "embedding = 4097\n"),
            "job.toml:12:13: features.hashed[0].embedding: must be at most "
            "4096 (dtf's limit), got 4097");
  EXPECT_EQ(Error("[[features.categorical]]\nname = \"sex\"\n"
                  "vocabulary = [\"a\"]\nnum_oov_buckets = 99999999999\n"),
            "job.toml:12:19: features.categorical[0].num_oov_buckets: must be "
            "at most 16777216 (dtf's limit), got 99999999999");
  EXPECT_EQ(Error("[[features.crossed]]\nname = \"x\"\n"
                  "columns = [\"city\", \"n\"]\nbuckets = 16777217\n"),
            "job.toml:12:11: features.crossed[0].buckets: must be at most "
            "16777216 (dtf's limit), got 16777217");
}

}  // namespace
}  // namespace dtf
