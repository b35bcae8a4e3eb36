#include "lib/runtime/model/feature_layer.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "lib/kernels/feature_transforms.h"
#include "tests/data/job_file_testing.h"

namespace dtf::runtime {
namespace {

using kernels::Context;

constexpr char kJob[] = R"(
[schema]
label = "label"
columns = ["age:float", "sex:str", "city:str", "kids:int", "label:int"]

[[features.numeric]]
name = "age"
normalize = true
default = 30

[[features.numeric]]
name = "kids"
deep = false
wide = true

[[features.categorical]]
name = "sex"
vocabulary = ["m", "f"]
embedding = 4

[[features.hashed]]
name = "city"
buckets = 10
embedding = 3
wide = false

[[features.bucketized]]
name = "age_buckets"
source = "age"
boundaries = [18, 40]

[[features.crossed]]
name = "sex_x_city"
columns = ["sex", "city"]
buckets = 7

[model]
type = "wide_deep"
hidden = [8]
)";

Column Floats(std::string name, std::vector<std::vector<float>> rows) {
  Column c;
  c.name = std::move(name);
  c.type = FeatureType::kFloat;
  c.var_len = true;
  c.row_splits = {0};
  for (const auto& row : rows) {
    c.floats.insert(c.floats.end(), row.begin(), row.end());
    c.row_splits.push_back(int64_t(c.floats.size()));
  }
  return c;
}

Column Ints(std::string name, std::vector<std::vector<int64_t>> rows) {
  Column c;
  c.name = std::move(name);
  c.type = FeatureType::kInt64;
  c.var_len = true;
  c.row_splits = {0};
  for (const auto& row : rows) {
    c.int64s.insert(c.int64s.end(), row.begin(), row.end());
    c.row_splits.push_back(int64_t(c.int64s.size()));
  }
  return c;
}

Column Strings(std::string name, std::vector<std::vector<std::string>> rows) {
  Column c;
  c.name = std::move(name);
  c.type = FeatureType::kBytes;
  c.var_len = true;
  c.row_splits = {0};
  c.bytes_offsets = {0};
  for (const auto& row : rows) {
    for (const std::string& s : row) {
      c.bytes += s;
      c.bytes_offsets.push_back(int64_t(c.bytes.size()));
    }
    c.row_splits.push_back(int64_t(c.bytes_offsets.size()) - 1);
  }
  return c;
}

class FeatureLayerTest : public JobFileFixture {
 protected:
  void SetUp() override {
    StatusOr<JobFile> job = LoadText(kJob);
    ASSERT_TRUE(job.ok()) << job.status();
    job_ = *std::move(job);
    StatusOr<FeatureLayer> layer =
        FeatureLayer::Create(job_.schema, job_.features, *job_.model);
    ASSERT_TRUE(layer.ok()) << layer.status();
    layer_.emplace(*std::move(layer));
  }

  // Four rows; the columns in ParseSpecs(true) order.
  Batch MakeBatch(std::vector<int64_t> labels = {0, 1, 1, 0}) {
    Batch b;
    b.rows = 4;
    for (const FeatureParseSpec& spec : layer_->ParseSpecs(true)) {
      if (spec.name == "age") {
        b.columns.push_back(Floats("age", {{10}, {}, {50}, {40}}));
      } else if (spec.name == "kids") {
        b.columns.push_back(Ints("kids", {{0}, {2}, {1}, {3}}));
      } else if (spec.name == "sex") {
        b.columns.push_back(Strings("sex", {{"m"}, {"x"}, {"f"}, {}}));
      } else if (spec.name == "city") {
        b.columns.push_back(
            Strings("city", {{"paris"}, {"rome"}, {"oslo"}, {"rome"}}));
      } else if (spec.name == "label") {
        Column c =
            Ints("label", {{labels[0]}, {labels[1]}, {labels[2]}, {labels[3]}});
        c.var_len = false;
        c.length = 1;
        b.columns.push_back(std::move(c));
      } else {
        ADD_FAILURE() << "unexpected source " << spec.name;
      }
    }
    return b;
  }

  std::vector<int64_t> Ids(const ModelInputs& in, std::string_view name) {
    for (size_t i = 0; i < layer_->sparse_inputs().size(); ++i) {
      if (layer_->sparse_inputs()[i].name == name) {
        const auto& ids = in.ids[i].ids;
        return std::vector<int64_t>(ids.data(), ids.data() + ids.size());
      }
    }
    ADD_FAILURE() << "no sparse input " << name;
    return {};
  }
  std::vector<int64_t> Splits(const ModelInputs& in, std::string_view name) {
    for (size_t i = 0; i < layer_->sparse_inputs().size(); ++i) {
      if (layer_->sparse_inputs()[i].name == name) {
        const auto& s = in.ids[i].row_splits;
        return std::vector<int64_t>(s.data(), s.data() + s.size());
      }
    }
    return {};
  }

  Context ctx_ = Context::Cpu(1);
  JobFile job_;
  std::optional<FeatureLayer> layer_;
};

TEST_F(FeatureLayerTest, LayoutFollowsTheFeatures) {
  EXPECT_EQ(layer_->deep_width(), 1);  // age
  EXPECT_EQ(layer_->wide_width(), 1);  // kids
  EXPECT_TRUE(layer_->needs_normalizer());
  ASSERT_EQ(layer_->sparse_inputs().size(), 4u);
  const auto& s = layer_->sparse_inputs();
  EXPECT_EQ(s[0].name, "sex");
  EXPECT_EQ(s[0].num_ids, 2);
  EXPECT_EQ(s[0].embedding, 4);
  EXPECT_FALSE(s[0].wide);  // an embedding turns the wide default off
  EXPECT_EQ(s[1].name, "city");
  EXPECT_EQ(s[2].name, "age_buckets");
  EXPECT_EQ(s[2].num_ids, 3);
  EXPECT_TRUE(s[2].wide);
  EXPECT_EQ(s[3].name, "sex_x_city");
  EXPECT_EQ(s[3].num_ids, 7);
  std::vector<std::string> sources;
  for (const auto& spec : layer_->ParseSpecs(true))
    sources.push_back(spec.name);
  EXPECT_EQ(sources,
            (std::vector<std::string>{"age", "kids", "sex", "city", "label"}));
}

TEST_F(FeatureLayerTest, TransformsEveryKind) {
  ASSERT_TRUE(layer_->SetNormalizer({{30.0f}, {10.0f}}).ok());
  ModelInputs in;
  Status st = layer_->Transform(ctx_, MakeBatch(), true, &in);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(in.rows, 4);
  // age normalized, its default (30) for the record without one.
  EXPECT_EQ(std::vector<float>(in.deep_dense.data(), in.deep_dense.data() + 4),
            (std::vector<float>{-2.0f, 0.0f, 2.0f, 1.0f}));
  EXPECT_EQ(std::vector<float>(in.wide_dense.data(), in.wide_dense.data() + 4),
            (std::vector<float>{0, 2, 1, 3}));
  // "x" is not in the vocabulary and there are no OOV buckets: no id.
  EXPECT_EQ(Ids(in, "sex"), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(Splits(in, "sex"), (std::vector<int64_t>{0, 1, 1, 2, 2}));
  kernels::IdTensor hashed;
  ASSERT_TRUE(kernels::HashBucket(
                  ctx_,
                  std::vector<std::string>{"paris", "rome", "oslo", "rome"}, 10,
                  &hashed)
                  .ok());
  EXPECT_EQ(Ids(in, "city"),
            std::vector<int64_t>(hashed.data(), hashed.data() + 4));
  // Bucketized on the raw value (before normalization), default included.
  EXPECT_EQ(Ids(in, "age_buckets"), (std::vector<int64_t>{0, 1, 2, 2}));
  // The cross has ids only where both inputs have one.
  EXPECT_EQ(Splits(in, "sex_x_city"), (std::vector<int64_t>{0, 1, 1, 2, 2}));
  kernels::SparseIds sex, city, crossed;
  sex.ids = kernels::IdTensor::FromValues({0, 1});
  sex.row_splits = kernels::IdTensor::FromValues({0, 1, 1, 2, 2});
  city.ids =
      kernels::IdTensor::FromValues(std::span<const int64_t>(hashed.data(), 4));
  city.row_splits = kernels::IdTensor::FromValues({0, 1, 2, 3, 4});
  const kernels::SparseIds* inputs[] = {&sex, &city};
  ASSERT_TRUE(kernels::CrossIds(ctx_, inputs, 7, &crossed).ok());
  EXPECT_EQ(Ids(in, "sex_x_city"),
            std::vector<int64_t>(crossed.ids.data(), crossed.ids.data() + 2));
  EXPECT_EQ(std::vector<float>(in.labels.data(), in.labels.data() + 4),
            (std::vector<float>{0, 1, 1, 0}));
}

TEST_F(FeatureLayerTest, NormalizerIsFitFromTheData) {
  kernels::NormalizerFit fit(layer_->normalized_width());
  ASSERT_TRUE(layer_->ObserveForNormalizer(ctx_, MakeBatch(), &fit).ok());
  ASSERT_EQ(fit.count(), 4);
  EXPECT_NEAR(fit.mean()[0], (10 + 30 + 50 + 40) / 4.0, 1e-5);
  // Without statistics Transform refuses to guess.
  ModelInputs in;
  EXPECT_EQ(layer_->Transform(ctx_, MakeBatch(), true, &in).code(),
            absl::StatusCode::kFailedPrecondition);
  // A constant column's zero deviation becomes 1.
  ASSERT_TRUE(layer_->SetNormalizer({{5.0f}, {0.0f}}).ok());
  EXPECT_EQ(layer_->normalizer().stddev[0], 1.0f);
  EXPECT_EQ(layer_->SetNormalizer({{1, 2}, {1, 2}}).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(FeatureLayerTest, MissingNumericWithoutDefaultNamesTheFeature) {
  ASSERT_TRUE(layer_->SetNormalizer({{0.0f}, {1.0f}}).ok());
  Batch b = MakeBatch();
  for (Column& c : b.columns) {
    if (c.name == "kids") c = Ints("kids", {{1}, {}, {1}, {1}});
  }
  ModelInputs in;
  Status st = layer_->Transform(ctx_, b, true, &in);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(Message(st).find("numeric feature \"kids\""), std::string::npos)
      << st;
}

TEST_F(FeatureLayerTest, BinaryLabelOutOfRangeIsAnError) {
  ASSERT_TRUE(layer_->SetNormalizer({{0.0f}, {1.0f}}).ok());
  ModelInputs in;
  Status st = layer_->Transform(ctx_, MakeBatch({0, 1, 2, 0}), true, &in);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(Message(st).find("label \"label\": 2 is not in [0, 1]"),
            std::string::npos)
      << st;
}

TEST_F(FeatureLayerTest, WithoutLabelTheLabelIsNotParsed) {
  for (const auto& spec : layer_->ParseSpecs(false)) {
    EXPECT_NE(spec.name, "label");
  }
}

constexpr char kDateTextJob[] = R"(
[schema]
label = "label"
columns = ["when:str", "review:str", "label:int"]

[[features.date]]
name = "when"
default = "2024-01-01"
embedding = 2
wide = true

[[features.text]]
name = "review"
buckets = 1000
embedding = 4
wide = true

[model]
type = "wide_deep"
hidden = [4]
)";

class DateTextLayerTest : public JobFileFixture {
 protected:
  StatusOr<FeatureLayer> Make(const std::string& text) {
    DTF_ASSIGN_OR_RETURN(job_, LoadText(text));
    return FeatureLayer::Create(job_.schema, job_.features, *job_.model);
  }

  // Three rows: the columns in ParseSpecs(true) order.
  static Batch MakeBatch(const FeatureLayer& layer,
                         std::vector<std::vector<std::string>> when) {
    Batch b;
    b.rows = 3;
    for (const FeatureParseSpec& spec : layer.ParseSpecs(true)) {
      if (spec.name == "when") {
        b.columns.push_back(Strings("when", when));
      } else if (spec.name == "review") {
        b.columns.push_back(Strings(
            "review", {{"The QUICK brown fox -- isn't caf\xC3\xA9-au-lait? "
                        "\xC3\x9Cn\xC3\xAF"
                        "code 42x"},
                       {},
                       {"one"}}));
      } else {
        Column c = Ints("label", {{0}, {1}, {0}});
        c.var_len = false;
        c.length = 1;
        b.columns.push_back(std::move(c));
      }
    }
    return b;
  }

  static std::vector<int64_t> Values(const kernels::IdTensor& t) {
    return std::vector<int64_t>(t.data(), t.data() + t.size());
  }

  JobFile job_;
  Context ctx_ = Context::Cpu(1);
};

TEST_F(DateTextLayerTest, LayoutOfTheDerivedInputs) {
  StatusOr<FeatureLayer> layer = Make(kDateTextJob);
  ASSERT_TRUE(layer.ok()) << layer.status();
  std::vector<std::string> names;
  for (const SparseInput& s : layer->sparse_inputs()) {
    names.push_back(s.name);
    EXPECT_TRUE(s.wide) << s.name;
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{"when/month", "when/day", "when/weekday",
                                      "when/hour", "review"}));
  const auto& s = layer->sparse_inputs();
  EXPECT_EQ(s[0].num_ids, 12);
  EXPECT_EQ(s[1].num_ids, 31);
  EXPECT_EQ(s[2].num_ids, 7);
  EXPECT_EQ(s[3].num_ids, 24);
  EXPECT_EQ(s[0].embedding, 2);
  EXPECT_EQ(s[4].num_ids, 1000);
  EXPECT_EQ(s[4].embedding, 4);
  EXPECT_EQ(s[4].combiner, kernels::Combiner::kMean);
  ASSERT_EQ(layer->dense_inputs().size(), 2u);
  EXPECT_EQ(layer->dense_inputs()[0].name, "when/year");
  EXPECT_EQ(layer->dense_inputs()[1].name, "when/epoch_days");
  EXPECT_TRUE(layer->dense_inputs()[1].normalize);
  EXPECT_EQ(layer->deep_width(), 2);
  EXPECT_EQ(layer->wide_width(), 2);
  EXPECT_EQ(layer->normalized_width(), 2);

  // A linear model: no embeddings, the real parts in the wide part only;
  // parts not asked for are left out.
  layer = Make(R"(
[schema]
label = "label"
columns = ["when:str", "label:int"]
[[features.date]]
name = "when"
parts = ["weekday", "epoch_days"]
[model]
type = "linear"
)");
  ASSERT_TRUE(layer.ok()) << layer.status();
  ASSERT_EQ(layer->sparse_inputs().size(), 1u);
  EXPECT_EQ(layer->sparse_inputs()[0].name, "when/weekday");
  EXPECT_EQ(layer->sparse_inputs()[0].embedding, 0);
  EXPECT_EQ(layer->deep_width(), 0);
  EXPECT_EQ(layer->wide_width(), 1);
}

TEST_F(DateTextLayerTest, TransformsDatesAndText) {
  StatusOr<FeatureLayer> layer = Make(kDateTextJob);
  ASSERT_TRUE(layer.ok()) << layer.status();
  const Batch batch =
      MakeBatch(*layer, {{"2024-03-05T14:30:00"}, {}, {"12/25/2023"}});
  kernels::NormalizerFit fit(2);
  ASSERT_TRUE(layer->ObserveForNormalizer(ctx_, batch, &fit).ok());
  EXPECT_NEAR(fit.mean()[0], (2024 + 2024 + 2023) / 3.0, 1e-3);
  EXPECT_NEAR(fit.mean()[1], (19787 + 14.5 / 24 + 19723 + 19716) / 3.0, 1e-2);
  ASSERT_TRUE(layer->SetNormalizer({{2000, 19000}, {10, 100}}).ok());
  ModelInputs in;
  Status st = layer->Transform(ctx_, batch, true, &in);
  ASSERT_TRUE(st.ok()) << st;
  // 2024-03-05 14:30 (a Tuesday), the default 2024-01-01 (a Monday) for the
  // record without a date, and 2023-12-25 (a Monday).
  EXPECT_EQ(Values(in.ids[0].ids), (std::vector<int64_t>{2, 0, 11}));
  EXPECT_EQ(Values(in.ids[1].ids), (std::vector<int64_t>{4, 0, 24}));
  EXPECT_EQ(Values(in.ids[2].ids), (std::vector<int64_t>{1, 0, 0}));
  EXPECT_EQ(Values(in.ids[3].ids), (std::vector<int64_t>{14, 0, 0}));
  EXPECT_EQ(Values(in.ids[0].row_splits), (std::vector<int64_t>{0, 1, 2, 3}));
  // year and epoch_days, z-scored, in both parts.
  const float want[3][2] = {
      {2.4f, (19787 + 14.5f / 24 - 19000) / 100}, {2.4f, 7.23f}, {2.3f, 7.16f}};
  for (int r = 0; r < 3; ++r) {
    for (int j = 0; j < 2; ++j) {
      EXPECT_NEAR(in.deep_dense[r * 2 + j], want[r][j], 1e-3) << r << "," << j;
      EXPECT_NEAR(in.wide_dense[r * 2 + j], want[r][j], 1e-3) << r << "," << j;
    }
  }
  // The review's terms hashed as TensorFlow 2.21 hashes them:
  //   tf.strings.to_hash_bucket_fast(tf.strings.ngrams(tokens,
  //       ngram_width=(1, 2), separator=" "), 1000)
  // over the tokens of tests/data/text_tokens_test.cc.
  EXPECT_EQ(Values(in.ids[4].ids),
            (std::vector<int64_t>{354, 276, 563, 430, 997, 721, 587, 62,
                                  983, 341, 135, 762, 830, 812, 213, 930,
                                  857, 649, 716, 522, 385, 505}));
  EXPECT_EQ(Values(in.ids[4].row_splits),
            (std::vector<int64_t>{0, 21, 21, 22}));
}

TEST_F(DateTextLayerTest, BadAndMissingDatesNameTheFeature) {
  StatusOr<FeatureLayer> layer = Make(kDateTextJob);
  ASSERT_TRUE(layer.ok()) << layer.status();
  ASSERT_TRUE(layer->SetNormalizer({{0, 0}, {1, 1}}).ok());
  ModelInputs in;
  Status st = layer->Transform(
      ctx_, MakeBatch(*layer, {{"2024-03-05"}, {"2024-13-01"}, {""}}), true,
      &in);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(st),
            "date feature \"when\": column \"when\": \"2024-13-01\" is not "
            "a date: month 13 is not in 1..12");
  // An empty string takes the default.
  st = layer->Transform(
      ctx_, MakeBatch(*layer, {{"2024-03-05"}, {""}, {"2024-03-05"}}), true,
      &in);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(Values(in.ids[0].ids), (std::vector<int64_t>{2, 0, 2}));

  // Without a default, a missing date is an error.
  std::string text = kDateTextJob;
  text.replace(text.find("default = \"2024-01-01\"\n"), 23, "");
  layer = Make(text);
  ASSERT_TRUE(layer.ok()) << layer.status();
  ASSERT_TRUE(layer->SetNormalizer({{0, 0}, {1, 1}}).ok());
  st = layer->Transform(ctx_, MakeBatch(*layer, {{"2024-03-05"}, {}, {""}}),
                        true, &in);
  EXPECT_EQ(Message(st),
            "date feature \"when\": a record has no \"when\" (or an empty "
            "one) and the feature sets no default");
  kernels::NormalizerFit fit(2);
  EXPECT_EQ(layer
                ->ObserveForNormalizer(
                    ctx_, MakeBatch(*layer, {{"2024-03-05"}, {}, {""}}), &fit)
                .code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dtf::runtime
