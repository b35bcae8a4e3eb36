#include "lib/data/job_toml.h"

#include <cstdint>
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

void ExpectSameSchema(const Schema& want, const Schema& got) {
  ASSERT_EQ(want.columns.size(), got.columns.size());
  for (size_t i = 0; i < want.columns.size(); ++i) {
    SCOPED_TRACE(StrCat("schema.columns[", i, "]"));
    const ColumnSpec& w = want.columns[i];
    const ColumnSpec& g = got.columns[i];
    EXPECT_EQ(w.name, g.name);
    EXPECT_EQ(w.type, g.type);
    EXPECT_EQ(w.default_value, g.default_value);
    EXPECT_EQ(w.required, g.required);
    EXPECT_EQ(w.skip, g.skip);
  }
  ASSERT_EQ(want.vectors.size(), got.vectors.size());
  for (size_t i = 0; i < want.vectors.size(); ++i) {
    SCOPED_TRACE(StrCat("schema.vectors[", i, "]"));
    const VectorSpec& w = want.vectors[i];
    const VectorSpec& g = got.vectors[i];
    EXPECT_EQ(w.name, g.name);
    EXPECT_EQ(w.type, g.type);
    EXPECT_EQ(w.columns, g.columns);
    EXPECT_EQ(w.default_value, g.default_value);
  }
  ASSERT_EQ(want.label.has_value(), got.label.has_value());
  if (want.label) {
    EXPECT_EQ(want.label->column, got.label->column);
    EXPECT_EQ(want.label->mapping, got.label->mapping);
  }
  EXPECT_EQ(want.missing_values, got.missing_values);
}

void ExpectSameUse(const CategoricalUse& want, const CategoricalUse& got) {
  EXPECT_EQ(want.embedding, got.embedding);
  EXPECT_EQ(want.combiner, got.combiner);
  EXPECT_EQ(want.wide, got.wide);
}

// Every field of `want` and `got`, except that `got` (read from the written
// text) has its vocabularies inline: no vocabulary_file.
void ExpectSameFeatures(const FeatureSpec& want, const FeatureSpec& got) {
  ASSERT_EQ(want.numeric.size(), got.numeric.size());
  for (size_t i = 0; i < want.numeric.size(); ++i) {
    SCOPED_TRACE(StrCat("features.numeric[", i, "]"));
    const NumericFeature& w = want.numeric[i];
    const NumericFeature& g = got.numeric[i];
    EXPECT_EQ(w.name, g.name);
    EXPECT_EQ(w.source, g.source);
    EXPECT_EQ(w.source_kind, g.source_kind);
    EXPECT_EQ(w.source_type, g.source_type);
    EXPECT_EQ(w.dimension, g.dimension);
    EXPECT_EQ(w.normalize, g.normalize);
    EXPECT_EQ(w.default_value, g.default_value);
    EXPECT_EQ(w.deep, g.deep);
    EXPECT_EQ(w.wide, g.wide);
  }
  ASSERT_EQ(want.categorical.size(), got.categorical.size());
  for (size_t i = 0; i < want.categorical.size(); ++i) {
    SCOPED_TRACE(StrCat("features.categorical[", i, "]"));
    const CategoricalFeature& w = want.categorical[i];
    const CategoricalFeature& g = got.categorical[i];
    EXPECT_EQ(w.name, g.name);
    EXPECT_EQ(w.source, g.source);
    EXPECT_EQ(w.source_type, g.source_type);
    EXPECT_EQ(w.vocabulary, g.vocabulary);
    EXPECT_EQ(g.vocabulary_file, "");
    EXPECT_EQ(w.num_oov_buckets, g.num_oov_buckets);
    EXPECT_EQ(w.num_ids(), g.num_ids());
    ExpectSameUse(w, g);
  }
  ASSERT_EQ(want.hashed.size(), got.hashed.size());
  for (size_t i = 0; i < want.hashed.size(); ++i) {
    SCOPED_TRACE(StrCat("features.hashed[", i, "]"));
    const HashedFeature& w = want.hashed[i];
    const HashedFeature& g = got.hashed[i];
    EXPECT_EQ(w.name, g.name);
    EXPECT_EQ(w.source, g.source);
    EXPECT_EQ(w.source_type, g.source_type);
    EXPECT_EQ(w.buckets, g.buckets);
    ExpectSameUse(w, g);
  }
  ASSERT_EQ(want.bucketized.size(), got.bucketized.size());
  for (size_t i = 0; i < want.bucketized.size(); ++i) {
    SCOPED_TRACE(StrCat("features.bucketized[", i, "]"));
    const BucketizedFeature& w = want.bucketized[i];
    const BucketizedFeature& g = got.bucketized[i];
    EXPECT_EQ(w.name, g.name);
    EXPECT_EQ(w.source, g.source);
    EXPECT_EQ(w.source_kind, g.source_kind);
    // Exact equality: the boundaries are written in shortest round-trip form.
    EXPECT_EQ(w.boundaries, g.boundaries);
    ExpectSameUse(w, g);
  }
  ASSERT_EQ(want.crossed.size(), got.crossed.size());
  for (size_t i = 0; i < want.crossed.size(); ++i) {
    SCOPED_TRACE(StrCat("features.crossed[", i, "]"));
    const CrossedFeature& w = want.crossed[i];
    const CrossedFeature& g = got.crossed[i];
    EXPECT_EQ(w.name, g.name);
    ASSERT_EQ(w.columns.size(), g.columns.size());
    for (size_t j = 0; j < w.columns.size(); ++j) {
      SCOPED_TRACE(StrCat("columns[", j, "]"));
      EXPECT_EQ(w.columns[j].name, g.columns[j].name);
      EXPECT_EQ(w.columns[j].kind, g.columns[j].kind);
    }
    EXPECT_EQ(w.buckets, g.buckets);
    ExpectSameUse(w, g);
  }
  ASSERT_EQ(want.date.size(), got.date.size());
  for (size_t i = 0; i < want.date.size(); ++i) {
    SCOPED_TRACE(StrCat("features.date[", i, "]"));
    const DateFeature& w = want.date[i];
    const DateFeature& g = got.date[i];
    EXPECT_EQ(w.name, g.name);
    EXPECT_EQ(w.source, g.source);
    EXPECT_EQ(w.format, g.format);
    EXPECT_EQ(w.parts, g.parts);
    EXPECT_EQ(w.default_value, g.default_value);
    ExpectSameUse(w, g);
  }
  ASSERT_EQ(want.text.size(), got.text.size());
  for (size_t i = 0; i < want.text.size(); ++i) {
    SCOPED_TRACE(StrCat("features.text[", i, "]"));
    const TextFeature& w = want.text[i];
    const TextFeature& g = got.text[i];
    EXPECT_EQ(w.name, g.name);
    EXPECT_EQ(w.source, g.source);
    EXPECT_EQ(w.buckets, g.buckets);
    EXPECT_EQ(w.ngrams, g.ngrams);
    ExpectSameUse(w, g);
  }
}

void ExpectSameModel(const ModelSpec& want, const ModelSpec& got) {
  EXPECT_EQ(want.type, got.type);
  EXPECT_EQ(want.hidden, got.hidden);
  EXPECT_EQ(want.activation, got.activation);
  EXPECT_EQ(want.batch_norm, got.batch_norm);
  EXPECT_EQ(want.dropout, got.dropout);
  EXPECT_EQ(want.loss, got.loss);
  EXPECT_EQ(want.classes, got.classes);
}

class JobTomlTest : public ::testing::Test {
 protected:
  // Loads the job at `path`.
  static JobFile Load(const std::string& path) {
    StatusOr<JobFile> job = LoadJobFile(path);
    EXPECT_TRUE(job.ok()) << job.status();
    EXPECT_TRUE(job.ok() && job->model.has_value());
    return job.ok() ? *std::move(job) : JobFile();
  }
  // Writes `text` as job.toml in the job directory, with `files` beside it,
  // and loads it.
  JobFile LoadText(
      const std::string& text,
      const std::vector<std::pair<std::string, std::string>>& files = {}) {
    for (const auto& [name, contents] : files) {
      testing::WriteFile(job_dir_.Join(name), contents);
    }
    const std::string path = job_dir_.Join("job.toml");
    testing::WriteFile(path, text);
    return Load(path);
  }
  // ModelDefinitionToToml(job) written to a directory of its own (so that
  // no vocabulary file could be found from it) and loaded back; `*text` gets
  // the text.
  JobFile RoundTrip(const JobFile& job, std::string* text = nullptr) {
    const std::string toml = ModelDefinitionToToml(job);
    if (text != nullptr) *text = toml;
    const std::string path = model_dir_.Join("model.toml");
    testing::WriteFile(path, toml);
    StatusOr<JobFile> loaded = LoadJobFile(path);
    EXPECT_TRUE(loaded.ok()) << loaded.status() << "\n" << toml;
    EXPECT_TRUE(loaded.ok() && loaded->model.has_value()) << toml;
    return loaded.ok() ? *std::move(loaded) : JobFile();
  }
  // Round-trips `job` and compares every field.
  void ExpectRoundTrips(const JobFile& job) {
    std::string text;
    const JobFile got = RoundTrip(job, &text);
    SCOPED_TRACE(text);
    ASSERT_TRUE(got.model.has_value());
    ExpectSameSchema(job.schema, got.schema);
    ExpectSameFeatures(job.features, got.features);
    ExpectSameModel(*job.model, *got.model);
    // Nothing of [data] or [train], and no path.
    EXPECT_THAT(text, Not(HasSubstr("[data]")));
    EXPECT_THAT(text, Not(HasSubstr("[train")));
    EXPECT_THAT(text, Not(HasSubstr("vocabulary_file")));
    EXPECT_THAT(text, Not(HasSubstr(job_dir_.path())));
    // Writing again gives the same text.
    EXPECT_EQ(ModelDefinitionToToml(got), text);
  }

  testing::TempDir job_dir_{"dtf_job_toml_job"};
  testing::TempDir model_dir_{"dtf_job_toml_model"};
};

TEST_F(JobTomlTest, CensusRoundTrips) {
  const JobFile job = Load(StrCat(DTF_SOURCE_DIR, "/examples/census/dtf.toml"));
  ASSERT_TRUE(job.model.has_value());
  ASSERT_FALSE(job.features.empty());
  ExpectRoundTrips(job);
}

TEST_F(JobTomlTest, TitanicRoundTrips) {
  const JobFile job =
      Load(StrCat(DTF_SOURCE_DIR, "/examples/titanic/dtf.toml"));
  ASSERT_TRUE(job.model.has_value());
  ASSERT_FALSE(job.features.empty());
  ExpectRoundTrips(job);
}

// 1 ("1" is a TOML integer) and 1e+20 get a float form; others stay as the
// shortest round-trip text.
constexpr char kSchema[] = R"([schema]
missing = ["NA", "say \"no\"", "back\\slash"]
label = "y"
columns = [
  "y:int",
  "city:str",
  "qu\"o\\te ü:str=''",
  "code:int=-7",
  "amount:float",
  "raw:float=0.1",
  "px1:float", "px2:float", "px3:float",
  "idx:int",
  { name = "tag", type = "str", required = true },
  { name = "unused", type = "str", skip = true },
]

[[schema.vectors]]
name = "pixels"
columns = ["px*"]
default = 0.5
)";

// A str vocabulary file (CR LF, quotes, backslashes, unicode) and an int one
// (non-canonical ints).
const std::vector<std::pair<std::string, std::string>> kVocabularyFiles = {
    {"cities.txt", "New York\r\nS\xC3\xA3o Paulo\nsay \"hi\"\nback\\slash\n"},
    {"codes.txt", "+1\n-02\n30"},
};

constexpr char kWideDeepFeatures[] = R"(
[[features.numeric]]
name = "amount"
normalize = true
default = -2.5
wide = true

[[features.numeric]]
name = "pix"
source = "pixels"
default = 0.1

[[features.numeric]]
name = "code_num"
source = "code"
default = 9007199254740993
deep = false

[[features.categorical]]
name = "city"
vocabulary_file = "cities.txt"
num_oov_buckets = 3
embedding = 4
combiner = "sum"
wide = true

[[features.categorical]]
name = "weird \"name\" \\ ü"
source = "qu\"o\\te ü"
vocabulary = ["a\"b", "c\\d", "line\nbreak", "tab\there", "ctl\u0001",
              "del\u007F", "", "日本語", "emoji 🎉", "cr\r"]
embedding = 3

[[features.categorical]]
name = "idx"
vocabulary = [0, -3, "+007", 9223372036854775807, "-9223372036854775808"]
num_oov_buckets = 2

[[features.categorical]]
name = "code_cat"
source = "code"
vocabulary_file = "codes.txt"
embedding = 2
combiner = "mean"
wide = true

[[features.hashed]]
name = "tag_h"
source = "tag"
buckets = 7
embedding = 5
combiner = "sum"
wide = true

[[features.hashed]]
name = "code_h"
source = "code"
buckets = 3

[[features.bucketized]]
name = "code_b"
source = "code_num"
boundaries = [-1, 0, 1.5]
wide = false

[[features.bucketized]]
name = "raw_b"
source = "raw"
boundaries = [-1.5e300, -0.1, 5e-324, 1e-300, 0.1, 0.30000000000000004, 1,
              3, 1.2345678901234567e19, 1e20, 1.7976931348623157e308]
embedding = 2
combiner = "sum"
wide = false

[[features.crossed]]
name = "x1"
columns = ["code_b", "city", "tag"]
buckets = 100
embedding = 6
combiner = "mean"
wide = true

[[features.crossed]]
name = "x2"
columns = ["weird \"name\" \\ ü", "code"]
buckets = 11
)";

TEST_F(JobTomlTest, WideDeepSoftmaxRoundTrips) {
  const JobFile job = LoadText(StrCat(kSchema, kWideDeepFeatures, R"(
[model]
type = "wide_deep"
hidden = [64, 32]
activation = "sigmoid"
batch_norm = true
dropout = 0.3
loss = "softmax_crossentropy"
classes = 5
)"),
                               kVocabularyFiles);
  ASSERT_TRUE(job.model.has_value());
  // The job is what the test means it to be.
  ASSERT_EQ(job.features.categorical.size(), 4u);
  EXPECT_EQ(job.features.categorical[0].vocabulary,
            (std::vector<std::string>{"New York", "S\xC3\xA3o Paulo",
                                      "say \"hi\"", "back\\slash"}));
  EXPECT_NE(job.features.categorical[0].vocabulary_file, "");
  EXPECT_EQ(job.features.categorical[2].vocabulary,
            (std::vector<std::string>{"0", "-3", "7", "9223372036854775807",
                                      "-9223372036854775808"}));
  EXPECT_EQ(job.features.categorical[3].vocabulary,
            (std::vector<std::string>{"1", "-2", "30"}));
  EXPECT_EQ(job.features.numeric[1].source_kind, InputKind::kVector);
  EXPECT_EQ(job.features.numeric[1].dimension, 3);
  EXPECT_EQ(job.features.bucketized[0].source_kind, InputKind::kFeature);
  EXPECT_EQ(job.features.bucketized[1].source_kind, InputKind::kColumn);
  EXPECT_EQ(job.features.crossed[0].columns[2].kind, InputKind::kColumn);
  EXPECT_EQ(job.model->classes, 5);
  ExpectRoundTrips(job);
}

TEST_F(JobTomlTest, DateAndTextRoundTrip) {
  const JobFile job = LoadText(R"([schema]
label = "y"
columns = ["y:int", "when:str", "born:str", "review:str", "title:str"]

[[features.date]]
name = "when"
embedding = 3
wide = true

[[features.date]]
name = "birth"
source = "born"
format = "dmy"
parts = ["weekday", "year", "month"]
default = "01.01.1990"

[[features.text]]
name = "review"
buckets = 5000
embedding = 8
combiner = "sum"
wide = true

[[features.text]]
name = "title"
buckets = 100
ngrams = 1

[model]
type = "wide_deep"
hidden = [8]
)");
  ASSERT_EQ(job.features.date.size(), 2u);
  EXPECT_EQ(job.features.date[0].format, DateFormat::kAuto);
  EXPECT_EQ(job.features.date[0].parts.size(), 6u);
  EXPECT_EQ(job.features.date[1].parts,
            (std::vector<DatePart>{DatePart::kYear, DatePart::kMonth,
                                   DatePart::kWeekday}));
  EXPECT_EQ(job.features.date[1].default_value, "01.01.1990");
  EXPECT_TRUE(job.features.date[1].wide);
  ASSERT_EQ(job.features.text.size(), 2u);
  EXPECT_EQ(job.features.text[0].combiner, Combiner::kSum);
  EXPECT_EQ(job.features.text[1].ngrams, 1);
  ExpectRoundTrips(job);
}

TEST_F(JobTomlTest, MlpRoundTrips) {
  const JobFile job = LoadText(StrCat(kSchema, R"(
[[features.numeric]]
name = "pix"
source = "pixels"

[[features.categorical]]
name = "city"
vocabulary_file = "cities.txt"
embedding = 4
wide = false

[[features.categorical]]
name = "idx"
vocabulary = [3, 1]
wide = false

[[features.crossed]]
name = "x"
columns = ["idx", "tag"]
buckets = 4
embedding = 2
combiner = "sum"
wide = false

[model]
type = "mlp"
hidden = []
activation = "tanh"
loss = "squared_error"
)"),
                               kVocabularyFiles);
  ASSERT_TRUE(job.model.has_value());
  EXPECT_TRUE(job.model->hidden.empty());
  ExpectRoundTrips(job);
}

TEST_F(JobTomlTest, LinearRoundTrips) {
  const JobFile job = LoadText(StrCat(kSchema, R"(
[[features.numeric]]
name = "amount"
deep = false
wide = true

[[features.numeric]]
name = "raw"

[[features.categorical]]
name = "city"
vocabulary = ["a", "b"]

[[features.crossed]]
name = "x"
columns = ["city", "code"]
buckets = 9

[model]
type = "linear"
)"));
  ASSERT_TRUE(job.model.has_value());
  std::string text;
  RoundTrip(job, &text);
  // The parser rejects the deep-part keys for a linear model and classes
  // without softmax.
  EXPECT_THAT(text, Not(HasSubstr("hidden")));
  EXPECT_THAT(text, Not(HasSubstr("activation")));
  EXPECT_THAT(text, Not(HasSubstr("batch_norm")));
  EXPECT_THAT(text, Not(HasSubstr("dropout")));
  EXPECT_THAT(text, Not(HasSubstr("classes")));
  EXPECT_THAT(text, Not(HasSubstr("combiner")));
  ExpectRoundTrips(job);
}

TEST_F(JobTomlTest, LabelMapRoundTrips) {
  // More than 8 labels: SchemaToToml writes [schema.label.map].
  const JobFile job = LoadText(R"([schema]
label = { column = "y", map = { a = 0, b = 1, c = 2, d = 3, e = 4, f = 5, g = 6, h = 7, "i \"j\"" = 8 } }
columns = ["y:str", "f:float"]

[[features.numeric]]
name = "f"

[model]
type = "mlp"
loss = "softmax_crossentropy"
classes = 9
)");
  ASSERT_TRUE(job.model.has_value());
  ExpectRoundTrips(job);
}

TEST_F(JobTomlTest, FeatureSpecToTomlWritesEveryKey) {
  FeatureSpec spec;
  NumericFeature n;
  n.name = "n";
  n.source = "col";
  n.default_value = 1;
  spec.numeric.push_back(n);
  CategoricalFeature c;
  c.name = "c";
  c.source = "s";
  c.vocabulary = {"x"};
  c.vocabulary_file = "/somewhere/vocab.txt";
  c.embedding = 2;
  c.combiner = Combiner::kSum;
  c.wide = false;
  spec.categorical.push_back(c);
  const std::string text = FeatureSpecToToml(spec);
  EXPECT_EQ(text, R"([features]

[[features.numeric]]
name = "n"
source = "col"
normalize = false
default = 1.0
deep = true
wide = false

[[features.categorical]]
name = "c"
source = "s"
vocabulary = ["x"]
num_oov_buckets = 0
embedding = 2
combiner = "sum"
wide = false
)");
}

TEST_F(JobTomlTest, ModelSpecToToml) {
  ModelSpec model;
  model.type = ModelType::kMlp;
  model.hidden = {3, 2};
  model.dropout = 0.1;
  model.loss = Loss::kSoftmaxCrossentropy;
  model.classes = 4;
  EXPECT_EQ(ModelSpecToToml(model), R"([model]
type = "mlp"
hidden = [3, 2]
activation = "relu"
batch_norm = false
dropout = 0.1
loss = "softmax_crossentropy"
classes = 4
)");
  model.type = ModelType::kLinear;
  model.loss = Loss::kSquaredError;
  EXPECT_EQ(ModelSpecToToml(model), R"([model]
type = "linear"
loss = "squared_error"
)");
}

}  // namespace
}  // namespace dtf
