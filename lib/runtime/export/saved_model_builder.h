// Internal to the SavedModel export (lib/runtime/export/saved_model.h): the
// builder of its graph, shared by saved_model.cc (variables, saver, the
// model's layers and outputs, the files), saved_model_tables.cc (the
// vocabulary tables), saved_model_inputs.cc (the signatures' inputs),
// saved_model_features.cc (the feature columns) and saved_model_dates.cc
// (the date features' parts).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/base/strings.h"
#include "lib/data/job_file.h"
#include "lib/runtime/export/tf_bundle.h"
#include "lib/runtime/export/tf_graph.h"
#include "lib/runtime/model/feature_layer.h"
#include "lib/runtime/model/model.h"
#include "proto/saved_model.pb.h"

namespace dtf::runtime::saved_model_internal {

using tensorflow::DataType;

// The TensorFlow type of a parsed feature's values.
DataType SmType(FeatureType type);

// A source column as the graph carries it: its values and the row of each
// (int64, never decreasing).
struct SmColumn {
  std::string values;
  std::string rows;
  DataType type = tensorflow::DT_FLOAT;
  // The place of each value in its row (int64); empty: every place 0.
  std::string places;
};

// One sparse input's ids and the row of each.
struct SmIds {
  std::string ids;
  std::string rows;
};

// The model's dense inputs as the graph gathers them: the deep and the wide
// part's columns, in the layer's dense order, and the normalizer's columns
// used so far.
struct SmDenseParts {
  std::vector<std::string> deep, wide;
  int64_t normalized = 0;
};

// One date feature's parts in each of the n rows (saved_model_dates.cc):
// year and epoch_days as float [n], the calendar parts' ids as int64 [n].
// Each depends on the graph's checks of the feature's values.
struct SmDate {
  std::string year, epoch_days;
  std::string month, day, weekday, hour;

  const std::string& Part(DatePart part) const;
};

// A file of the SavedModel's assets/ (a vocabulary, one value a line) and
// the graph's string constant holding its name, which loaders feed with the
// file's path.
struct SmAsset {
  std::string filename;
  std::string contents;
  std::string tensor;
};

// The NoOp that initializes every table (saved_model_tables.cc).
inline constexpr std::string_view kSmInitOp = "init_all_tables";

// Builds the SavedModel of one model; Build() once.
class SmBuilder {
 public:
  // `table_num_ps` > 1: the embedding and wide weight tables are saved as
  // the parameter servers hold them (sharded_format.h): the rows of PS 0
  // (ids 0, N, 2N, ...), then PS 1's, ...; the graph looks id i up at row
  // offset(i mod N) + i div N.
  SmBuilder(const JobFile& job, const FeatureLayer& layer, const Model& model,
            int table_num_ps = 1)
      : job_(job),
        spec_(*job.model),
        layer_(layer),
        model_(model),
        table_num_ps_(table_num_ps),
        sources_(layer.ParseSpecs(/*with_label=*/false)) {}

  Status Build();
  tensorflow::SavedModel& saved_model() { return saved_model_; }
  std::vector<TfBundleTensor> BundleTensors() const;
  // The files of assets/; valid after Build().
  const std::vector<SmAsset>& assets() const { return assets_; }

 private:
  std::string Read(const std::string& variable) const {
    return reads_.at(variable);
  }
  void AddVariables();
  // One table a categorical feature, from an assets/ file where its values
  // can be written as lines, else from constants; then the init op.
  void AddTables();
  void AddSaver();
  int SourceIndex(const std::string& name) const;
  // Values per row of a source: a [schema] vector's length, else 1.
  int64_t Dimension(const std::string& source) const;

  // One placeholder a source, in the predict signature `sig`; `dims` gets
  // each source's values per row.
  std::vector<std::string> RawPlaceholders(const std::string& scope,
                                           tensorflow::SignatureDef* sig,
                                           std::vector<int64_t>* dims);
  // The number of rows n (int64), the first placeholder's; it depends on
  // Asserts that every other placeholder holds as many rows.
  std::string RawRowCount(const std::string& scope,
                          const std::vector<std::string>& placeholders,
                          const std::vector<int64_t>& dims);
  // Placeholder `x` of a [n, dim] vector source as a column: each value,
  // its row and its place.
  SmColumn VectorColumn(const std::string& sc, const std::string& x,
                        DataType type, int64_t dim, const std::string& rows,
                        const std::string& n);
  // bool [n]: the cells of placeholder `x` that hold a missing value (a
  // schema's missing token, NaN); "" where the type has none.
  std::string MissingCells(const std::string& sc, const std::string& x,
                           DataType type);
  // Placeholder `x` of column `name` as a column: a missing cell takes the
  // column's default, or else holds no value.
  SmColumn CellColumn(const std::string& sc, const std::string& name,
                      const std::string& x, DataType type,
                      const std::string& rows);
  // The n rows' inputs of the predict signature and of the Example one.
  Status RawInputs(tensorflow::SignatureDef* sig, std::string* n,
                   std::vector<SmColumn>* columns);
  void ExampleInputs(tensorflow::SignatureDef* sig, std::string* n,
                     std::vector<SmColumn>* columns);
  // `v` [n, dimension] z-scored with the layer's statistics from
  // normalized column `offset` on.
  std::string Normalized(const std::string& sc, const std::string& v,
                         int64_t offset, int64_t dimension);
  StatusOr<std::string> Logits(const std::string& scope, const std::string& n,
                               const std::vector<SmColumn>& columns);
  // Numeric features' values into `parts`, normalized where the feature
  // asks; returns each feature's raw values [n] where it has one value
  // (bucketized features read them), else "".
  std::vector<std::string> NumericParts(const std::string& scope,
                                        const std::string& n,
                                        const std::vector<SmColumn>& columns,
                                        SmDenseParts* parts);
  // Date features' parts; year and epoch_days go normalized into `parts`,
  // in the layer's dense order after the numeric features.
  StatusOr<std::vector<SmDate>> DateDenseParts(
      const std::string& scope, const std::string& n,
      const std::vector<SmColumn>& columns, SmDenseParts* parts);
  // The wide part's logits [n, outputs]: its dense inputs and the one-hot
  // sparse inputs, plus its bias.
  std::string WideLogits(const std::string& scope, const std::string& n,
                         const std::vector<std::string>& wide_parts,
                         const std::vector<SmIds>& ids);
  // The deep part's logits: the dense inputs and the embeddings, through
  // batch normalization and the hidden layers.
  std::string DeepLogits(const std::string& scope, const std::string& n,
                         std::vector<std::string> deep_parts,
                         const std::vector<SmIds>& ids);
  std::string BatchNorm(const std::string& sc, std::string x);
  // `input` times the kernel of deep layer `name`, plus its bias.
  std::string DenseLayer(const std::string& sc, const std::string& name,
                         const std::string& input);
  std::string NumericValues(const std::string& scope, size_t feature,
                            const std::string& n, const SmColumn& column);
  // The column of source `source`.
  const SmColumn& ColumnOf(const std::vector<SmColumn>& columns,
                           const std::string& source) const;
  // Categorical feature `feature`'s ids: its table's, then an OOV bucket's
  // for a value the vocabulary lacks where it has OOV buckets, else none.
  SmIds CategoricalIds(const std::string& scope, size_t feature,
                       const SmColumn& column);
  SmIds BucketizedIds(const std::string& scope, const BucketizedFeature& f,
                      const std::string& n,
                      const std::vector<SmColumn>& columns,
                      const std::vector<std::string>& raw_numeric);
  // Crossed feature f's ids, from columns and the sparse inputs `ids` built
  // before it.
  StatusOr<SmIds> CrossedIds(const std::string& scope, const CrossedFeature& f,
                             const std::string& n,
                             const std::vector<SmColumn>& columns,
                             const std::vector<SmIds>& ids);
  // Every sparse input's ids, in the layer's order.
  StatusOr<std::vector<SmIds>> SparseIdsOf(
      const std::string& scope, const std::string& n,
      const std::vector<SmColumn>& columns,
      const std::vector<std::string>& raw_numeric,
      const std::vector<SmDate>& dates);
  // Date feature `feature`'s parts, from its column's values.
  StatusOr<SmDate> DateParts(const std::string& scope, size_t feature,
                             const std::string& n, const SmColumn& column);
  // The text of each of the n rows (string [n]): the row's one value, ""
  // for none; a graph Assert fails the batch for a row with several.
  std::string DateText(const std::string& sc, const DateFeature& f,
                       const std::string& n, const SmColumn& column);
  // `text` with an empty value replaced by f's default; without one, a
  // check appended to `checks` fails the batch for an empty value.
  std::string DateOrDefault(const std::string& sc, const DateFeature& f,
                            std::string text, std::vector<std::string>* checks);
  // Each row's `text` as "year month day|time", rewritten by the first of
  // f's forms that takes it (a value none takes reads 1970-01-01);
  // `*matched` (empty on entry): bool [n], whether one did. A check
  // appended to `checks` fails the batch for a value no form takes.
  std::string CanonicalDate(const std::string& sc, const DateFeature& f,
                            const std::string& text,
                            std::vector<std::string>* checks,
                            std::string* matched);
  // Asserts all of bool `ok`, with `message` and, unless `text` is empty,
  // the values of string tensor `text` where it does not hold; returns the
  // Assert node.
  std::string AssertAll(const std::string& sc, const std::string& ok,
                        const std::string& message, const std::string& text);
  SmIds TextIds(const std::string& scope, const TextFeature& f,
                const SmColumn& column);
  std::string Range(const std::string& scope, const std::string& n);
  // The rows of `variable`'s table (its value read in the graph) that
  // `ids` select, combined per row.
  std::string Combine(const std::string& scope, const std::string& variable,
                      const SmIds& ids, const std::string& n, bool mean);
  // "logits", "probabilities", ... of one signature.
  void Outputs(const std::string& scope, const std::string& logits,
               const std::string& n, bool examples,
               tensorflow::SignatureDef* sig);

  void SetInfo(tensorflow::TensorInfo* info, const std::string& tensor,
               DataType type, std::vector<int64_t> dims) {
    info->set_name(
        StrCat(tensor, tensor.find(':') == std::string::npos ? ":0" : ""));
    info->set_dtype(type);
    for (int64_t d : dims) info->mutable_tensor_shape()->add_dim()->set_size(d);
  }

  const JobFile& job_;
  const ModelSpec& spec_;
  const FeatureLayer& layer_;
  const Model& model_;
  int table_num_ps_ = 1;
  std::vector<FeatureParseSpec> sources_;
  TfGraph g_;
  tensorflow::SavedModel saved_model_;
  std::map<std::string, std::string> handles_;  // variable -> VarHandleOp
  std::map<std::string, std::string> reads_;    // variable -> its value
  std::vector<std::string> tables_;             // per categorical feature
  std::vector<std::string> table_inits_;
  std::vector<SmAsset> assets_;
};

}  // namespace dtf::runtime::saved_model_internal
