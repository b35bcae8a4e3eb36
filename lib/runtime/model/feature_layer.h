// The feature layer: turns a parsed batch of Examples into a model's inputs,
// as TensorFlow's DenseFeatures / LinearModel feature handling does for the
// job's [features] (docs/job-file.md). Numeric features become dense
// columns (z-scored when `normalize` is set); categorical, hashed, bucketized
// and crossed features become ragged id lists, one per feature, that the
// model looks up in its wide weights and embedding tables. A date feature
// becomes one id list per calendar part ("<name>/month", ...) and a
// z-scored dense column per real part ("<name>/year", "<name>/epoch_days");
// a text feature becomes one id list of its hashed terms.
//
// A FeatureLayer is immutable once its normalization statistics are set;
// Transform() may be called from several threads with distinct outputs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/data/batch.h"
#include "lib/data/date_parse.h"
#include "lib/data/features.h"
#include "lib/data/model_options.h"
#include "lib/data/schema.h"
#include "lib/kernels/context.h"
#include "lib/kernels/embedding.h"
#include "lib/kernels/feature_transforms.h"
#include "lib/kernels/tensor.h"

namespace dtf::runtime {

// One categorical-kind feature as the model sees it.
struct SparseInput {
  std::string name;
  int64_t num_ids = 0;
  // Embedding dimension in the deep part; 0: none.
  int64_t embedding = 0;
  Combiner combiner = Combiner::kMean;
  // One-hot into the wide part.
  bool wide = false;
};

// One numeric feature's place in the dense inputs.
struct DenseInput {
  std::string name;
  int64_t dimension = 1;
  bool normalize = false;
  // Column offset in ModelInputs::deep_dense, or -1 when not deep.
  int64_t deep_offset = -1;
  // Column offset in ModelInputs::wide_dense, or -1 when not wide.
  int64_t wide_offset = -1;
};

// What the model consumes for one batch. Buffers are reused across calls.
struct ModelInputs {
  int64_t rows = 0;
  // [rows, deep_width()] and [rows, wide_width()] (0 columns when unused).
  kernels::Tensor deep_dense;
  kernels::Tensor wide_dense;
  // One per FeatureLayer::sparse_inputs(), in that order.
  std::vector<kernels::SparseIds> ids;
  // Labels, when transformed with labels: [rows, 1] floats for binary
  // cross-entropy and squared error, class ids for softmax.
  kernels::Tensor labels;
  kernels::IdTensor class_labels;
};

// z-score statistics of the normalized numeric features: per value column of
// each normalized feature, in DenseInput order.
struct NormalizerStats {
  std::vector<float> mean;
  std::vector<float> stddev;
  bool operator==(const NormalizerStats&) const = default;
};

class FeatureLayer {
 public:
  // REQUIRES: schema, features and model come from one loaded job file (so
  // they are consistent).
  static StatusOr<FeatureLayer> Create(const Schema& schema,
                                       const FeatureSpec& features,
                                       const ModelSpec& model);

  // The Example features to parse: every source column the features read,
  // and the label last when `with_label`.
  std::vector<FeatureParseSpec> ParseSpecs(bool with_label) const;

  // Numeric features with normalize = true need statistics before
  // Transform(): computed by FitNormalizer over the training data or restored
  // from a checkpoint.
  bool needs_normalizer() const { return normalized_width_ > 0; }
  // Values per row over the normalized features.
  int64_t normalized_width() const { return normalized_width_; }
  // Adds a batch parsed with ParseSpecs(...) to `*fit`, which must have been
  // made with normalized_width() features.
  Status ObserveForNormalizer(const kernels::Context& ctx, const Batch& batch,
                              kernels::NormalizerFit* fit) const;
  // InvalidArgument unless the sizes match normalized_width(). A stddev of 0
  // (a constant column) is replaced by 1.
  Status SetNormalizer(NormalizerStats stats);
  const NormalizerStats& normalizer() const { return normalizer_; }

  // Computes the model inputs of `batch` (parsed with ParseSpecs(with_label)).
  // InvalidArgument naming the feature for a record that lacks a numeric or
  // date feature without a default, has the wrong number of values, or
  // holds a date feature's value that is not a date.
  Status Transform(const kernels::Context& ctx, const Batch& batch,
                   bool with_label, ModelInputs* out) const;

  const std::vector<SparseInput>& sparse_inputs() const { return sparse_; }
  const std::vector<DenseInput>& dense_inputs() const { return dense_; }
  int64_t deep_width() const { return deep_width_; }
  int64_t wide_width() const { return wide_width_; }
  const std::string& label() const { return label_; }

 private:
  // How one source column is parsed and where Transform() finds it.
  struct Source {
    std::string name;
    FeatureType type = FeatureType::kFloat;
    // Values per row when read as a number (1 for a column).
    int64_t dimension = 1;
    int column = -1;  // index in the parsed batch
  };
  // One date feature's column.
  struct DateInput {
    std::string name;  // the feature's
    int source = -1;
    DateFormat format = DateFormat::kAuto;
    std::optional<DateTime> default_value;
  };
  // One numeric feature, or a date feature's year or epoch_days.
  struct Numeric {
    int source = -1;
    std::optional<float> default_value;
    int64_t normalized_offset = -1;  // into the normalizer's columns
    int date = -1;                   // index in dates_ for a date part
    DatePart part = DatePart::kYear;
  };
  // How one sparse input's ids are computed.
  struct SparseStep {
    FeatureKind kind = FeatureKind::kCategorical;
    int source = -1;   // categorical, hashed, bucketized from a column
    int numeric = -1;  // bucketized from a numeric feature
    std::optional<kernels::Vocabulary> vocabulary;  // categorical
    int64_t buckets = 0;                            // hashed, crossed
    std::vector<float> boundaries;                  // bucketized
    // crossed: each input is a sparse input index (>= 0) or ~source.
    std::vector<int> cross_inputs;
    int date = -1;  // date: index in dates_, and the calendar part
    DatePart part = DatePart::kMonth;
    int ngrams = 2;  // text
  };
  struct Scratch;

  FeatureLayer() = default;
  // The source `name` (a [schema] vector when `vector`), added unless the
  // layer reads it already; its index in sources_.
  int AddSource(const Schema& schema, const std::string& name, bool vector);
  // Create()'s steps, in the order of the model's inputs: numeric features;
  // categorical, hashed and bucketized ones; crossed ones; each date
  // feature's parts; then (in Create) text features.
  void AddNumerics(const Schema& schema, const FeatureSpec& features,
                   const ModelSpec& model);
  void AddSparse(const ModelSpec& model, const std::string& name,
                 int64_t num_ids, const CategoricalUse& use, SparseStep step);
  Status AddColumnIds(const Schema& schema, const FeatureSpec& features,
                      const ModelSpec& model);
  Status AddCrossed(const Schema& schema, const FeatureSpec& features,
                    const ModelSpec& model);
  Status AddDate(const Schema& schema, const DateFeature& f,
                 const ModelSpec& model);
  // InvalidArgument when two sparse inputs share a name.
  Status CheckNames() const;
  Status SetLabel(const Schema& schema);

  // Transform()'s steps. Numeric feature `numeric`'s values into `raw`
  // (rows x dimension) and, normalized, into out's dense inputs.
  Status DenseValues(const Batch& batch, size_t numeric,
                     std::vector<float>* raw, ModelInputs* out) const;
  // Sparse input `sparse`'s ids into out->ids; `raw`: DenseValues' values.
  Status StepIds(const kernels::Context& ctx, const Batch& batch, size_t sparse,
                 const std::vector<std::vector<float>>& raw,
                 ModelInputs* out) const;
  // Crossed input `sparse`, from columns and the sparse inputs before it.
  Status CrossedIds(const kernels::Context& ctx, const Batch& batch,
                    size_t sparse, ModelInputs* out) const;
  // A date feature's calendar part, one id a row.
  Status DateIds(const Batch& batch, const SparseStep& step,
                 kernels::SparseIds* ids) const;
  // A categorical, hashed or bucketized input read from its column.
  Status ColumnIds(const kernels::Context& ctx, const Batch& batch,
                   const SparseStep& step, kernels::SparseIds* ids) const;
  Status Labels(const Batch& batch, ModelInputs* out) const;
  Status NumericValues(const Batch& batch, size_t numeric, int64_t row,
                       float* out) const;
  Status DateAt(const Batch& batch, size_t date, int64_t row,
                DateTime* out) const;
  Status TextIds(const kernels::Context& ctx, const Batch& batch,
                 const SparseStep& step, kernels::SparseIds* ids) const;

  std::vector<Source> sources_;
  std::vector<DateInput> dates_;
  std::vector<Numeric> numerics_;
  std::vector<DenseInput> dense_;
  std::vector<SparseInput> sparse_;
  std::vector<SparseStep> steps_;
  int64_t deep_width_ = 0;
  int64_t wide_width_ = 0;
  int64_t normalized_width_ = 0;
  NormalizerStats normalizer_;
  std::string label_;
  FeatureType label_type_ = FeatureType::kInt64;
  Loss loss_ = Loss::kBinaryCrossentropy;
  int64_t classes_ = 0;
};

}  // namespace dtf::runtime
