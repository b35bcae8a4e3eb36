#include "lib/data/model_options.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/data/job_file.h"
#include "tests/data/job_file_testing.h"
#include "tests/testing/paths.h"

namespace dtf {
namespace {

using ::testing::ElementsAre;

// 4 lines.
constexpr char kSchema[] = R"([schema]
label = "y"
columns = ["y:int", "f:float", "s:str", "n:int"]

)";
// 8 lines: a wide and a deep input, so the [model] table starts on line 13.
constexpr char kWideAndDeep[] = R"([[features.numeric]]
name = "f"
[[features.categorical]]
name = "s"
vocabulary = ["a", "b"]
[[features.hashed]]
name = "n"
buckets = 3
)";

class ModelSpecTest : public JobFileFixture {
 protected:
  ModelSpec Load(const std::string& text) {
    StatusOr<JobFile> job = LoadText(text);
    EXPECT_TRUE(job.ok()) << job.status();
    EXPECT_TRUE(job.ok() && job->model.has_value());
    return job.ok() && job->model ? *job->model : ModelSpec();
  }
  std::string Error(const std::string& text) { return LoadError(text); }
  // The message for kSchema, kWideAndDeep and `model`.
  std::string ModelError(const std::string& model) {
    return Error(std::string(kSchema) + kWideAndDeep + model);
  }
};

std::string Job(std::string_view model) {
  return std::string(kSchema) + kWideAndDeep + std::string(model);
}

TEST_F(ModelSpecTest, Defaults) {
  const ModelSpec model = Load(Job("[model]\ntype = \"wide_deep\"\n"));
  EXPECT_EQ(model.type, ModelType::kWideDeep);
  EXPECT_THAT(model.hidden, ElementsAre(128));
  EXPECT_EQ(model.activation, Activation::kRelu);
  EXPECT_FALSE(model.batch_norm);
  EXPECT_EQ(model.dropout, 0);
  EXPECT_EQ(model.loss, Loss::kBinaryCrossentropy);
  EXPECT_EQ(model.classes, 0);
  EXPECT_EQ(model.outputs(), 1);
  EXPECT_TRUE(model.has_wide());
  EXPECT_TRUE(model.has_deep());
}

TEST_F(ModelSpecTest, EveryKey) {
  const ModelSpec model = Load(std::string(kSchema) + R"([[features.numeric]]
name = "f"
[model]
type = "mlp"
hidden = [64, 32]
activation = "tanh"
batch_norm = true
dropout = 0.5
loss = "softmax_crossentropy"
classes = 3
)");
  EXPECT_EQ(model.type, ModelType::kMlp);
  EXPECT_THAT(model.hidden, ElementsAre(64, 32));
  EXPECT_EQ(model.activation, Activation::kTanh);
  EXPECT_TRUE(model.batch_norm);
  EXPECT_EQ(model.dropout, 0.5);
  EXPECT_EQ(model.loss, Loss::kSoftmaxCrossentropy);
  EXPECT_EQ(model.outputs(), 3);
  EXPECT_FALSE(model.has_wide());
  EXPECT_EQ(Load(std::string(kSchema) +
                 "[[features.numeric]]\nname = \"f\"\n[model]\ntype = "
                 "\"mlp\"\nhidden = []\nloss = \"squared_error\"\n")
                .hidden.size(),
            0u);
  EXPECT_EQ(ModelTypeName(ModelType::kWideDeep), "wide_deep");
  EXPECT_EQ(ActivationName(Activation::kSigmoid), "sigmoid");
  EXPECT_EQ(LossName(Loss::kSquaredError), "squared_error");
}

TEST_F(ModelSpecTest, LinearTakesEveryInput) {
  // Numeric features feed a linear model as real values, deep or wide.
  const ModelSpec model = Load(std::string(kSchema) +
                               "[[features.numeric]]\nname = \"f\"\n"
                               "[model]\ntype = \"linear\"\n");
  EXPECT_EQ(model.type, ModelType::kLinear);
  EXPECT_FALSE(model.has_deep());
  EXPECT_EQ(Error(std::string(kSchema) +
                  "[[features.hashed]]\nname = \"n\"\nbuckets = 3\n"
                  "embedding = 2\n[model]\ntype = \"linear\"\n"),
            "job.toml:8:13: features.hashed[0].embedding: a linear model has "
            "no deep part: drop the embedding (the feature then feeds the "
            "model one-hot)");
  EXPECT_EQ(Error(std::string(kSchema) + "[model]\ntype = \"linear\"\n"),
            "job.toml:6:8: model.type: a linear model needs at least one "
            "feature in [features]");
  EXPECT_EQ(
      ModelError("[model]\ntype = \"linear\"\nhidden = [3]\n"),
      "job.toml:15:10: model.hidden: only for mlp and wide_deep models (a "
      "linear model has no deep part)");
}

TEST_F(ModelSpecTest, DateAndTextFeedTheModelTypes) {
  // Without an embedding they feed the wide part, which an mlp lacks.
  EXPECT_EQ(Error(std::string(kSchema) +
                  "[[features.text]]\nname = \"s\"\nbuckets = 9\n"
                  "[model]\ntype = \"mlp\"\n"),
            "job.toml:5:1: features.text[0].wide: feeds the wide part (wide "
            "defaults to true without an embedding), which an mlp model "
            "lacks: give it an embedding and wide = false");
  EXPECT_EQ(Error(std::string(kSchema) +
                  "[[features.date]]\nname = \"s\"\nembedding = 2\n"
                  "[model]\ntype = \"linear\"\n"),
            "job.toml:7:13: features.date[0].embedding: a linear model has "
            "no deep part: drop the embedding (the feature then feeds the "
            "model one-hot)");
  EXPECT_EQ(Load(std::string(kSchema) +
                 "[[features.date]]\nname = \"s\"\nembedding = 2\n"
                 "[model]\ntype = \"mlp\"\n")
                .type,
            ModelType::kMlp);
  EXPECT_EQ(Load(std::string(kSchema) +
                 "[[features.text]]\nname = \"s\"\nbuckets = 9\n"
                 "[model]\ntype = \"linear\"\n")
                .type,
            ModelType::kLinear);
}

TEST_F(ModelSpecTest, FeedErrors) {
  EXPECT_EQ(ModelError("[model]\ntype = \"mlp\"\n"),
            "job.toml:7:1: features.categorical[0].wide: feeds the wide part "
            "(wide defaults to true without an embedding), which an mlp model "
            "lacks: give it an embedding and wide = false");
  EXPECT_EQ(Error(std::string(kSchema) +
                  "[[features.numeric]]\nname = \"f\"\nwide = true\n"
                  "[model]\ntype = \"mlp\"\n"),
            "job.toml:7:8: features.numeric[0].wide: an mlp model has no wide "
            "part: set wide = false");
  EXPECT_EQ(Error(std::string(kSchema) +
                  "[[features.numeric]]\nname = \"f\"\ndeep = false\n"
                  "wide = true\n[model]\ntype = \"mlp\"\n"),
            "job.toml:8:8: features.numeric[0].wide: an mlp model has no wide "
            "part: set wide = false");
  EXPECT_EQ(Error(std::string(kSchema) + "[model]\ntype = \"mlp\"\n"),
            "job.toml:6:8: model.type: an mlp model needs at least one feature "
            "feeding the deep part (a numeric feature with deep = true, or an "
            "embedding)");
  EXPECT_EQ(Error(std::string(kSchema) + "[[features.numeric]]\nname = \"f\"\n"
                                         "[model]\ntype = \"wide_deep\"\n"),
            "job.toml:8:8: model.type: a wide_deep model needs at least one "
            "feature feeding the wide part (wide = true)");
  EXPECT_EQ(Error(std::string(kSchema) +
                  "[[features.hashed]]\nname = \"n\"\nbuckets = 3\n"
                  "[model]\ntype = \"wide_deep\"\n"),
            "job.toml:9:8: model.type: a wide_deep model needs at least one "
            "feature feeding the deep part (a numeric feature with deep = "
            "true, or an embedding)");
}

TEST_F(ModelSpecTest, KeyErrors) {
  EXPECT_EQ(ModelError("[model]\nhidden = [3]\n"),
            "job.toml:13:1: model.type: missing (linear, mlp or wide_deep)");
  EXPECT_EQ(ModelError("[model]\ntype = \"wide-deep\"\n"),
            "job.toml:14:8: model.type: unknown value \"wide-deep\" (did you "
            "mean wide_deep?)");
  EXPECT_EQ(ModelError("[model]\ntype = \"dnn\"\n"),
            "job.toml:14:8: model.type: expected one of linear, mlp, "
            "wide_deep, got \"dnn\"");
  EXPECT_EQ(ModelError("[model]\ntype = \"mlp\"\nhiden = [3]\n"),
            "job.toml:15:1: model.hiden: unknown key (did you mean hidden?)");
  EXPECT_EQ(ModelError("[model]\ntype = \"wide_deep\"\nhidden = [3, 0]\n"),
            "job.toml:15:14: model.hidden[1]: must be at least 1, got 0");
  EXPECT_EQ(ModelError("[model]\ntype = \"wide_deep\"\nhidden = 3\n"),
            "job.toml:15:10: model.hidden: expected a list of layer sizes, got "
            "3");
  EXPECT_EQ(ModelError("[model]\ntype = \"wide_deep\"\ndropout = 1\n"),
            "job.toml:15:11: model.dropout: must be in [0, 1), got 1");
  EXPECT_EQ(
      ModelError("[model]\ntype = \"wide_deep\"\nactivation = \"Relu\"\n"),
      "job.toml:15:14: model.activation: unknown value \"Relu\" (did "
      "you mean relu?)");
  EXPECT_EQ(ModelError("[model]\ntype = \"wide_deep\"\nclasses = 2\n"),
            "job.toml:15:11: model.classes: only with loss = "
            "\"softmax_crossentropy\"");
  EXPECT_EQ(ModelError("[model]\ntype = \"wide_deep\"\n"
                       "loss = \"softmax_crossentropy\"\n"),
            "job.toml:13:1: model.classes: missing: softmax_crossentropy "
            "needs the number of classes (>= 2)");
  EXPECT_EQ(ModelError("[model]\ntype = \"wide_deep\"\n"
                       "loss = \"softmax_crossentropy\"\nclasses = 1\n"),
            "job.toml:16:11: model.classes: must be at least 2, got 1");
}

TEST_F(ModelSpecTest, LabelFitsTheLoss) {
  const std::string features = "[[features.numeric]]\nname = \"f\"\n";
  EXPECT_EQ(Error("[schema]\ncolumns = [\"f:float\"]\n" + features +
                  "[model]\ntype = \"mlp\"\n"),
            "job.toml:5:1: model.loss: binary_crossentropy needs a label: set "
            "label in [schema]");
  EXPECT_EQ(Error("[schema]\nlabel = \"y\"\ncolumns = [\"y:str\", "
                  "\"f:float\"]\n" +
                  features + "[model]\ntype = \"mlp\"\n"),
            "job.toml:6:1: model.loss: the label \"y\" is a str column: give "
            "[schema] label a map (label = { column = ..., map = { ... } })");
  EXPECT_EQ(Error("[schema]\nlabel = \"y\"\ncolumns = [\"y:float\", "
                  "\"f:float\"]\n" +
                  features +
                  "[model]\ntype = \"mlp\"\nloss = \"softmax_crossentropy\"\n"
                  "classes = 3\n"),
            "job.toml:8:8: model.loss: softmax_crossentropy needs int labels; "
            "the label \"y\" is a float column");
  const std::string mapped =
      "[schema]\nlabel = { column = \"y\", map = { a = 0, b = 1, c = 2 } }\n"
      "columns = [\"y:str\", \"f:float\"]\n" +
      features;
  EXPECT_EQ(Error(mapped + "[model]\ntype = \"mlp\"\n"),
            "job.toml:6:1: model.loss: binary_crossentropy needs labels 0 and "
            "1; the label map gives \"c\" = 2");
  EXPECT_EQ(Error(mapped +
                  "[model]\ntype = \"mlp\"\nloss = \"softmax_crossentropy\"\n"
                  "classes = 2\n"),
            "job.toml:8:8: model.loss: softmax_crossentropy needs labels in "
            "[0, 2); the label map gives \"c\" = 2");
  EXPECT_EQ(
      Load(mapped + "[model]\ntype = \"mlp\"\nloss = \"softmax_crossentropy\"\n"
                    "classes = 3\n")
          .classes,
      3);
  // A float label is fine for binary cross-entropy (probabilities) and
  // squared error.
  EXPECT_EQ(Load("[schema]\nlabel = \"y\"\ncolumns = [\"y:float\", "
                 "\"f:float\"]\n" +
                 features + "[model]\ntype = \"mlp\"\n")
                .loss,
            Loss::kBinaryCrossentropy);
}

TEST_F(ModelSpecTest, Examples) {
  StatusOr<JobFile> titanic =
      LoadJobFile(std::string(DTF_SOURCE_DIR) + "/examples/titanic/dtf.toml");
  ASSERT_TRUE(titanic.ok()) << titanic.status();
  const FeatureSpec& f = titanic->features;
  EXPECT_EQ(f.numeric.size(), 4u);
  EXPECT_EQ(f.categorical.size(), 3u);
  EXPECT_THAT(f.categorical[1].vocabulary, ElementsAre("1", "2", "3"));
  EXPECT_EQ(f.hashed.size(), 1u);
  ASSERT_EQ(f.bucketized.size(), 1u);
  EXPECT_EQ(f.bucketized[0].source_kind, InputKind::kFeature);
  EXPECT_EQ(f.bucketized[0].num_ids(), 10);
  ASSERT_EQ(f.crossed.size(), 1u);
  EXPECT_TRUE(f.crossed[0].wide);
  ASSERT_TRUE(titanic->model.has_value());
  EXPECT_EQ(titanic->model->type, ModelType::kWideDeep);
  EXPECT_TRUE(titanic->model->batch_norm);
  EXPECT_THAT(titanic->model->hidden, ElementsAre(128));
  ASSERT_TRUE(titanic->train.wide_optimizer.has_value());
  EXPECT_EQ(titanic->train.wide_optimizer->l1, 0.5);
  EXPECT_EQ(titanic->train.deep_optimizer->type, OptimizerType::kAdagrad);

  StatusOr<JobFile> census =
      LoadJobFile(std::string(DTF_SOURCE_DIR) + "/examples/census/dtf.toml");
  ASSERT_TRUE(census.ok()) << census.status();
  EXPECT_EQ(census->features.size(), 13u);
  ASSERT_TRUE(census->model.has_value());
  EXPECT_THAT(census->model->hidden, ElementsAre(100, 50));
  EXPECT_EQ(census->train.wide_optimizer->type, OptimizerType::kFtrl);
}

TEST_F(ModelSpecTest, SizesOverTheCapsAreRefused) {
  EXPECT_EQ(ModelError("[model]\ntype = \"wide_deep\"\nhidden = [3, 65537]\n"),
            "job.toml:15:14: model.hidden[1]: must be at most 65536 (dtf's "
            "limit), got 65537");
  EXPECT_EQ(ModelError("[model]\ntype = \"wide_deep\"\n"
                       "hidden = [3, 9223372036854775807]\n"),
            "job.toml:15:14: model.hidden[1]: must be at most 65536 (dtf's "
            "limit), got 9223372036854775807");
  std::string layers = "hidden = [1";
  for (int i = 1; i < 65; ++i) layers += ", 1";
  EXPECT_EQ(ModelError("[model]\ntype = \"mlp\"\n" + layers + "]\n"),
            "job.toml:15:10: model.hidden: 65 layers, over dtf's limit of 64");
  EXPECT_EQ(ModelError("[model]\ntype = \"wide_deep\"\n"
                       "loss = \"softmax_crossentropy\"\nclasses = 65537\n"),
            "job.toml:16:11: model.classes: must be at most 65536 (dtf's "
            "limit), got 65537");
  EXPECT_EQ(
      Load(Job("[model]\ntype = \"wide_deep\"\nhidden = [65536]\n")).hidden,
      std::vector<int64_t>{65536});
}

}  // namespace
}  // namespace dtf
