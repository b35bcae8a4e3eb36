#include "lib/runtime/feature_layer.h"

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

}  // namespace
}  // namespace dtf::runtime
