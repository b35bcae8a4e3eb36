#include "lib/runtime/model/model.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/kernels/loss.h"
#include "tests/data/job_file_testing.h"

namespace dtf::runtime {
namespace {

using kernels::Context;
using kernels::Tensor;

// Two numeric inputs, a vocabulary (wide and embedded), a hashed column
// (embedded, mean of two ids per row) and a cross (wide only).
std::string Job(std::string_view model, bool deep = true) {
  std::string text = StrCat(R"(
[schema]
label = "y"
columns = ["a:float", "b:float", "c:str", "d:str", "y:int"]

[[features.numeric]]
name = "a"
wide = true

[[features.numeric]]
name = "b"

[[features.categorical]]
name = "c"
vocabulary = ["x", "y", "z"]
embedding = 3
wide = true

[[features.hashed]]
name = "d"
buckets = 5
embedding = 2
combiner = "mean"

[[features.crossed]]
name = "c_x_d"
columns = ["c", "d"]
buckets = 4
)",
                            model);
  if (!deep) {  // a linear model: no embeddings
    for (std::string_view e :
         {"embedding = 3\n", "embedding = 2\n", "combiner = \"mean\"\n"}) {
      text.erase(text.find(e), e.size());
    }
  }
  return text;
}

class ModelTest : public JobFileFixture {
 protected:
  // A model of `model_toml` ([model] table) and inputs of 6 random rows.
  void Build(std::string_view model_toml, bool deep = true) {
    StatusOr<JobFile> job = LoadText(Job(model_toml, deep));
    ASSERT_TRUE(job.ok()) << job.status();
    job_ = *std::move(job);
    StatusOr<FeatureLayer> layer =
        FeatureLayer::Create(job_.schema, job_.features, *job_.model);
    ASSERT_TRUE(layer.ok()) << layer.status();
    layer_.emplace(*std::move(layer));
    StatusOr<std::unique_ptr<Model>> model =
        Model::Create(*layer_, *job_.model, 7);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = *std::move(model);

    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(-1, 1);
    const int64_t rows = 6;
    in_.rows = rows;
    in_.deep_dense = Tensor::Empty({rows, layer_->deep_width()});
    for (float& v : in_.deep_dense.span()) v = u(rng);
    in_.wide_dense = Tensor::Empty({rows, layer_->wide_width()});
    for (float& v : in_.wide_dense.span()) v = u(rng);
    in_.ids.resize(layer_->sparse_inputs().size());
    for (size_t i = 0; i < in_.ids.size(); ++i) {
      const int64_t n = layer_->sparse_inputs()[i].num_ids;
      std::vector<int64_t> ids, splits{0};
      for (int64_t r = 0; r < rows; ++r) {
        const int per_row = r == 2 ? 0 : 1 + int(r % 2);  // row 2 empty
        for (int k = 0; k < per_row; ++k) ids.push_back((r * 7 + k * 3) % n);
        splits.push_back(int64_t(ids.size()));
      }
      in_.ids[i].ids = kernels::IdTensor::FromValues(ids);
      in_.ids[i].row_splits = kernels::IdTensor::FromValues(splits);
    }
    in_.labels = Tensor::FromValues({rows, 1}, {0, 1, 1, 0, 1, 0});
    // Random (not zero) values everywhere, so that every path is exercised.
    for (Variable& v : model_->variables()) {
      if (!v.trainable) continue;
      for (float& x : v.value.span()) x = 0.5f * u(rng);
    }
  }

  double Loss() {
    Tensor logits;
    EXPECT_TRUE(model_->Forward(ctx_, in_, true, &logits).ok());
    auto loss = kernels::SigmoidCrossEntropy(ctx_, logits, in_.labels, nullptr);
    return double(*loss);
  }

  // Every trainable variable's gradient against central differences.
  void CheckGradients() {
    Tensor logits, dlogits;
    ASSERT_TRUE(model_->Forward(ctx_, in_, true, &logits).ok());
    ASSERT_TRUE(
        kernels::SigmoidCrossEntropy(ctx_, logits, in_.labels, &dlogits).ok());
    std::vector<Gradient> grads;
    Status st = model_->Backward(ctx_, in_, dlogits, &grads);
    ASSERT_TRUE(st.ok()) << st;
    auto& vars = model_->variables();
    ASSERT_EQ(grads.size(), vars.size());
    int checked = 0;
    for (size_t i = 0; i < vars.size(); ++i) {
      Variable& v = vars[i];
      if (!v.trainable) continue;
      const int64_t cols = v.value.rank() == 2 ? v.value.cols() : 1;
      for (int64_t e = 0; e < v.value.size(); ++e) {
        double analytic = 0;
        if (v.sparse) {
          const int64_t row = e / cols;
          const auto& g = grads[i].sparse;
          for (int64_t u = 0; u < g.ids.size(); ++u) {
            if (g.ids[u] == row) analytic = g.rows[u * cols + e % cols];
          }
        } else {
          ASSERT_EQ(grads[i].dense.size(), v.value.size()) << v.name;
          analytic = grads[i].dense[e];
        }
        const float saved = v.value[e];
        const float h = 1e-2f;
        v.value[e] = saved + h;
        const double plus = Loss();
        v.value[e] = saved - h;
        const double minus = Loss();
        v.value[e] = saved;
        const double numeric = (plus - minus) / (2 * h);
        EXPECT_NEAR(analytic, numeric, 2e-3 + 2e-2 * std::abs(numeric))
            << v.name << "[" << e << "]";
        ++checked;
      }
    }
    EXPECT_GE(checked, 15);
  }

  Context ctx_ = Context::Cpu(1);
  JobFile job_;
  std::optional<FeatureLayer> layer_;
  std::unique_ptr<Model> model_;
  ModelInputs in_;
};

TEST_F(ModelTest, WideDeepVariables) {
  Build(R"(
[model]
type = "wide_deep"
hidden = [5, 4]
batch_norm = true
)");
  std::vector<std::string> names;
  for (const Variable& v : model_->variables()) names.push_back(v.name);
  EXPECT_EQ(
      names,
      (std::vector<std::string>{
          "wide/c", "wide/c_x_d", "wide/dense", "wide/bias", "deep/c/embedding",
          "deep/d/embedding", "deep/batch_norm/gamma", "deep/batch_norm/beta",
          "deep/batch_norm/moving_mean", "deep/batch_norm/moving_variance",
          "deep/dense_0/kernel", "deep/dense_0/bias", "deep/dense_1/kernel",
          "deep/dense_1/bias", "deep/logits/kernel", "deep/logits/bias"}));
  const Variable* emb = model_->Find("deep/c/embedding");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->value.shape(), (std::vector<int64_t>{3, 3}));
  EXPECT_TRUE(emb->sparse);
  EXPECT_EQ(model_->Find("deep/dense_0/kernel")->value.shape(),
            (std::vector<int64_t>{2 + 3 + 2, 5}));  // a, b, c emb, d emb
  EXPECT_FALSE(model_->Find("deep/batch_norm/moving_mean")->trainable);
  EXPECT_EQ(model_->Find("wide/dense")->part, Part::kWide);
}

TEST_F(ModelTest, WideDeepGradientsMatchFiniteDifferences) {
  Build(R"(
[model]
type = "wide_deep"
hidden = [5, 4]
activation = "tanh"
)");
  CheckGradients();
}

// Backward's `ready` hears of every trainable variable once, the logits
// layer first and the wide part last, and only once its gradient is final:
// the gradients it has heard of hold the values they end with.
TEST_F(ModelTest, BackwardSaysWhenEachGradientIsFinal) {
  Build(R"(
[model]
type = "wide_deep"
hidden = [5, 4]
batch_norm = true
)");
  Tensor logits, dlogits;
  ASSERT_TRUE(model_->Forward(ctx_, in_, true, &logits).ok());
  ASSERT_TRUE(
      kernels::SigmoidCrossEntropy(ctx_, logits, in_.labels, &dlogits).ok());
  std::vector<Gradient> plain;
  ASSERT_TRUE(model_->Backward(ctx_, in_, dlogits, &plain).ok());

  const auto& vars = model_->variables();
  std::vector<Gradient> grads;
  std::vector<std::string> order;
  // A copy of each gradient as `ready` saw it.
  std::vector<std::vector<float>> seen(vars.size());
  auto values = [&](size_t v, const std::vector<Gradient>& g) {
    const Tensor& t = vars[v].sparse ? g[v].sparse.rows : g[v].dense;
    return std::vector<float>(t.span().begin(), t.span().end());
  };
  Status st = model_->Backward(ctx_, in_, dlogits, &grads, [&](size_t v) {
    order.push_back(vars[v].name);
    seen[v] = values(v, grads);
    return OkStatus();
  });
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(order,
            (std::vector<std::string>{
                "deep/logits/kernel", "deep/logits/bias", "deep/dense_1/kernel",
                "deep/dense_1/bias", "deep/dense_0/kernel", "deep/dense_0/bias",
                "deep/batch_norm/gamma", "deep/batch_norm/beta",
                "deep/c/embedding", "deep/d/embedding", "wide/dense", "wide/c",
                "wide/c_x_d", "wide/bias"}));
  for (size_t v = 0; v < vars.size(); ++v) {
    if (!vars[v].trainable) continue;
    EXPECT_EQ(seen[v], values(v, grads)) << vars[v].name;
    EXPECT_EQ(values(v, plain), values(v, grads)) << vars[v].name;
  }

  // An error from `ready` ends the pass with it.
  st = model_->Backward(ctx_, in_, dlogits, &grads,
                        [](size_t) { return InternalError("stop here"); });
  EXPECT_EQ(st.code(), absl::StatusCode::kInternal);
}

TEST_F(ModelTest, BatchNormGradientsMatchFiniteDifferences) {
  Build(R"(
[model]
type = "wide_deep"
hidden = [6]
activation = "sigmoid"
batch_norm = true
)");
  CheckGradients();
}

TEST_F(ModelTest, LinearGradientsMatchFiniteDifferences) {
  Build(R"(
[model]
type = "linear"
)",
        /*deep=*/false);
  CheckGradients();
}

TEST_F(ModelTest, InitializationIsSeeded) {
  Build("[model]\ntype = \"wide_deep\"\nhidden = [4]\n");
  StatusOr<std::unique_ptr<Model>> a = Model::Create(*layer_, *job_.model, 1);
  StatusOr<std::unique_ptr<Model>> b = Model::Create(*layer_, *job_.model, 1);
  StatusOr<std::unique_ptr<Model>> c = Model::Create(*layer_, *job_.model, 2);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  const Tensor& ka = (*a)->Find("deep/dense_0/kernel")->value;
  const Tensor& kb = (*b)->Find("deep/dense_0/kernel")->value;
  const Tensor& kc = (*c)->Find("deep/dense_0/kernel")->value;
  EXPECT_TRUE(
      std::equal(ka.span().begin(), ka.span().end(), kb.span().begin()));
  EXPECT_FALSE(
      std::equal(ka.span().begin(), ka.span().end(), kc.span().begin()));
  // Glorot-uniform bounds; wide weights start at zero.
  const double limit = std::sqrt(6.0 / (ka.rows() + ka.cols()));
  for (float v : ka.span()) EXPECT_LE(std::abs(v), limit);
  for (float v : (*a)->Find("wide/c")->value.span()) EXPECT_EQ(v, 0.0f);
}

// A parameter-server worker's model: no rows of its tables, every dense
// variable as the whole model has it, and the whole shapes in specs().
TEST_F(ModelTest, WithoutSparseRowsTheTablesAreEmpty) {
  Build("[model]\ntype = \"wide_deep\"\nhidden = [4]\n");
  StatusOr<std::unique_ptr<Model>> whole =
      Model::Create(*layer_, *job_.model, 3);
  StatusOr<std::unique_ptr<Model>> compact =
      Model::Create(*layer_, *job_.model, 3, /*sparse_rows=*/false);
  ASSERT_TRUE(whole.ok() && compact.ok());
  const auto& vars = (*compact)->variables();
  ASSERT_EQ(vars.size(), (*whole)->variables().size());
  int tables = 0;
  for (size_t i = 0; i < vars.size(); ++i) {
    const Tensor& full = (*whole)->variables()[i].value;
    EXPECT_EQ((*compact)->specs()[i].shape, full.shape()) << vars[i].name;
    if (vars[i].sparse) {
      ++tables;
      EXPECT_EQ(vars[i].value.rows(), 0) << vars[i].name;
      continue;
    }
    ASSERT_EQ(vars[i].value.shape(), full.shape()) << vars[i].name;
    EXPECT_TRUE(std::equal(full.span().begin(), full.span().end(),
                           vars[i].value.span().begin()))
        << vars[i].name;
  }
  EXPECT_GE(tables, 2);
}

TEST_F(ModelTest, DropoutOnlyWhenTraining) {
  Build("[model]\ntype = \"wide_deep\"\nhidden = [64]\ndropout = 0.5\n");
  Tensor train1, train2, infer1, infer2;
  ASSERT_TRUE(model_->Forward(ctx_, in_, true, &train1).ok());
  ASSERT_TRUE(model_->Forward(ctx_, in_, true, &train2).ok());
  ASSERT_TRUE(model_->Forward(ctx_, in_, false, &infer1).ok());
  ASSERT_TRUE(model_->Forward(ctx_, in_, false, &infer2).ok());
  EXPECT_TRUE(std::equal(infer1.span().begin(), infer1.span().end(),
                         infer2.span().begin()));
  EXPECT_FALSE(std::equal(train1.span().begin(), train1.span().end(),
                          train2.span().begin()));
}

}  // namespace
}  // namespace dtf::runtime

namespace dtf::runtime {
namespace {

// A parameter server makes only its rows; they must equal the same rows of
// the whole model.
TEST_F(ModelTest, AnyRowsInitializeAsTheWholeModelDoes) {
  Build("[model]\ntype = \"wide_deep\"\nhidden = [4]\nbatch_norm = true\n");
  StatusOr<std::vector<VariableSpec>> layout =
      Model::Layout(*layer_, *job_.model);
  StatusOr<std::unique_ptr<Model>> whole =
      Model::Create(*layer_, *job_.model, 9);
  ASSERT_TRUE(layout.ok() && whole.ok());
  ASSERT_EQ(layout->size(), (*whole)->variables().size());
  for (size_t i = 0; i < layout->size(); ++i) {
    const VariableSpec& v = (*layout)[i];
    const Tensor& full = (*whole)->variables()[i].value;
    EXPECT_EQ(v.shape, full.shape()) << v.name;
    const int64_t cols = v.shape.size() > 1 ? v.shape[1] : 1;
    const std::vector<int64_t> rows = {v.shape[0] - 1, 0};
    std::vector<float> out(size_t(2 * cols));
    InitializeRows(v, 9, rows, out.data());
    for (int64_t c = 0; c < cols; ++c) {
      EXPECT_EQ(out[size_t(c)], full[(v.shape[0] - 1) * cols + c]) << v.name;
      EXPECT_EQ(out[size_t(cols + c)], full[c]) << v.name;
    }
  }
}

// Job-file caps allow each size alone; together they may still ask for
// more than a variable or a model may hold, refused before allocating.
TEST_F(ModelTest, ModelsOverTheSizeLimitsAreRefusedBeforeAllocating) {
  auto layout_error = [&](std::string_view features) -> std::string {
    StatusOr<JobFile> job = LoadText(StrCat(R"([schema]
label = "y"
columns = ["d:str", "e:str", "f:str", "y:int"]
)",
                                            features, R"(
[model]
type = "mlp"
hidden = [4]
)"));
    EXPECT_TRUE(job.ok()) << job.status();
    if (!job.ok()) return "";
    StatusOr<FeatureLayer> layer =
        FeatureLayer::Create(job->schema, job->features, *job->model);
    EXPECT_TRUE(layer.ok()) << layer.status();
    if (!layer.ok()) return "";
    StatusOr<std::vector<VariableSpec>> layout =
        Model::Layout(*layer, *job->model);
    if (layout.ok()) return "";
    StatusOr<std::unique_ptr<Model>> model =
        Model::Create(*layer, *job->model, 1);
    EXPECT_FALSE(model.ok());
    if (!model.ok()) {
      EXPECT_EQ(model.status(), layout.status());
    }
    EXPECT_EQ(layout.status().code(), StatusCode::kInvalidArgument);
    return std::string(Message(layout.status()));
  };
  // 2^24 x 2^12 = 2^36 elements in one variable.
  const std::string one = layout_error(R"(
[[features.hashed]]
name = "d"
buckets = 16777216
embedding = 4096
)");
  EXPECT_NE(one.find("model: variable deep/d/embedding of shape "
                     "[16777216, 4096] is over the limit of 2147483648 "
                     "elements per variable"),
            std::string::npos)
      << one;
  // Three variables of 2^24 x 100 floats (6.25 GiB each).
  std::string features;
  for (std::string_view name : {"d", "e", "f"}) {
    features += StrCat("[[features.hashed]]\nname = \"", name,
                       "\"\nbuckets = 16777216\nembedding = 100\n");
  }
  const std::string total = layout_error(features);
  EXPECT_NE(total.find("model: its variables (up to deep/f/embedding) are "
                       "over the limit of 17179869184 bytes (16 GiB"),
            std::string::npos)
      << total;
}

}  // namespace
}  // namespace dtf::runtime
