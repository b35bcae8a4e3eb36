#include "lib/runtime/saved_model.h"

#include <unistd.h>

#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <system_error>
#include <utility>
#include <variant>
#include <vector>

#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/runtime/tf_bundle.h"
#include "lib/runtime/tf_graph.h"
#include "proto/saved_model.pb.h"

namespace dtf::runtime {
namespace {

namespace fs = std::filesystem;
using tensorflow::DataType;
using tensorflow::DT_BOOL;
using tensorflow::DT_FLOAT;
using tensorflow::DT_INT32;
using tensorflow::DT_INT64;
using tensorflow::DT_RESOURCE;
using tensorflow::DT_STRING;
using tensorflow::NodeDef;

// The GraphDef version the graph is written for (TensorFlow 2.12's).
constexpr int kSmGraphProducer = 1286;
constexpr std::string_view kSmInitOp = "init_all_tables";
constexpr std::string_view kSmInitSignature = "__saved_model_init_op";
constexpr std::string_view kSmVariablesPrefix = "variables/variables";

DataType SmType(FeatureType type) {
  switch (type) {
    case FeatureType::kBytes:
      return DT_STRING;
    case FeatureType::kInt64:
      return DT_INT64;
    case FeatureType::kFloat:
      break;
  }
  return DT_FLOAT;
}

// A source column as the graph carries it: its values and the row of each
// (int64, never decreasing).
struct SmColumn {
  std::string values;
  std::string rows;
  DataType type = DT_FLOAT;
  // The place of each value in its row (int64); empty: every place 0.
  std::string places;
};

// One sparse input's ids and the row of each.
struct SmIds {
  std::string ids;
  std::string rows;
};

class SmBuilder {
 public:
  SmBuilder(const JobFile& job, const FeatureLayer& layer, const Model& model)
      : job_(job),
        spec_(*job.model),
        layer_(layer),
        model_(model),
        sources_(layer.ParseSpecs(/*with_label=*/false)) {}

  Status Build();
  tensorflow::SavedModel& saved_model() { return saved_model_; }
  std::vector<TfBundleTensor> BundleTensors() const;

 private:
  std::string Read(const std::string& variable) const {
    return reads_.at(variable);
  }
  void AddVariables();
  void AddTables();
  void AddSaver();
  int SourceIndex(const std::string& name) const;
  // Values per row of a source: a [schema] vector's length, else 1.
  int64_t Dimension(const std::string& source) const;

  // The n rows' inputs of the predict signature and of the Example one.
  Status RawInputs(tensorflow::SignatureDef* sig, std::string* n,
                   std::vector<SmColumn>* columns);
  void ExampleInputs(tensorflow::SignatureDef* sig, std::string* n,
                     std::vector<SmColumn>* columns);
  StatusOr<std::string> Logits(const std::string& scope, const std::string& n,
                               const std::vector<SmColumn>& columns);
  std::string NumericValues(const std::string& scope, size_t feature,
                            const std::string& n, const SmColumn& column);
  StatusOr<std::vector<SmIds>> SparseIdsOf(
      const std::string& scope, const std::string& n,
      const std::vector<SmColumn>& columns,
      const std::vector<std::string>& raw_numeric);
  SmIds TextIds(const std::string& scope, const TextFeature& f,
                const SmColumn& column);
  std::string Range(const std::string& scope, const std::string& n);
  std::string Combine(const std::string& scope, const std::string& table,
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
  std::vector<FeatureParseSpec> sources_;
  TfGraph g_;
  tensorflow::SavedModel saved_model_;
  std::map<std::string, std::string> handles_;  // variable -> VarHandleOp
  std::map<std::string, std::string> reads_;    // variable -> its value
  std::vector<std::string> tables_;             // per categorical feature
  std::vector<std::string> table_inits_;
};

int SmBuilder::SourceIndex(const std::string& name) const {
  for (size_t i = 0; i < sources_.size(); ++i) {
    if (sources_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

int64_t SmBuilder::Dimension(const std::string& source) const {
  for (const VectorSpec& v : job_.schema.vectors) {
    if (v.name == source) return static_cast<int64_t>(v.columns.size());
  }
  return 1;
}

std::vector<TfBundleTensor> SmBuilder::BundleTensors() const {
  std::vector<TfBundleTensor> tensors;
  for (const Variable& v : model_.variables()) {
    tensors.push_back(TfBundleTensor{v.name, &v.value});
  }
  return tensors;
}

void SmBuilder::AddVariables() {
  for (const Variable& v : model_.variables()) {
    NodeDef* handle = g_.Add(v.name, "VarHandleOp");
    TfGraph::SetType(handle, "dtype", DT_FLOAT);
    TfGraph::SetShape(handle, "shape", v.value.shape());
    TfGraph::SetString(handle, "shared_name", handle->name());
    TfGraph::SetString(handle, "container", "");
    handles_[v.name] = handle->name();
    NodeDef* read = g_.Add(StrCat(handle->name(), "/Read/ReadVariableOp"),
                           "ReadVariableOp", {handle->name()});
    TfGraph::SetType(read, "dtype", DT_FLOAT);
    reads_[v.name] = read->name();
  }
}

void SmBuilder::AddTables() {
  for (const CategoricalFeature& f : job_.features.categorical) {
    const std::string scope = StrCat("vocabulary/", f.name);
    NodeDef* table = g_.Add(StrCat(scope, "/table"), "HashTableV2");
    TfGraph::SetType(table, "key_dtype", DT_STRING);
    TfGraph::SetType(table, "value_dtype", DT_INT64);
    TfGraph::SetString(table, "shared_name", table->name());
    TfGraph::SetString(table, "container", "");
    TfGraph::SetBool(table, "use_node_name_sharing", false);
    std::vector<int64_t> ids(f.vocabulary.size());
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i);
    const auto size = static_cast<int64_t>(ids.size());
    const std::string keys =
        g_.Strings(StrCat(scope, "/keys"), f.vocabulary, {size});
    const std::string values = g_.Int64s(StrCat(scope, "/values"), ids, {size});
    NodeDef* init = g_.Add(StrCat(scope, "/table_init"), "InitializeTableV2",
                           {table->name(), keys, values});
    TfGraph::SetType(init, "Tkey", DT_STRING);
    TfGraph::SetType(init, "Tval", DT_INT64);
    tables_.push_back(table->name());
    table_inits_.push_back(init->name());
  }
  std::vector<std::string> deps;
  for (const std::string& init : table_inits_) deps.push_back("^" + init);
  g_.Add(kSmInitOp, "NoOp", std::move(deps));
}

void SmBuilder::AddSaver() {
  const std::string filename = g_.String("save/Const", "model");
  std::vector<std::string> names;
  std::vector<std::string> handles;
  std::vector<std::string> reads;
  for (const Variable& v : model_.variables()) {
    names.push_back(v.name);
    handles.push_back(handles_.at(v.name));
    reads.push_back(reads_.at(v.name));
  }
  const auto count = static_cast<int64_t>(names.size());
  const std::vector<DataType> types(names.size(), DT_FLOAT);
  const std::vector<std::string> slices(names.size(), "");
  auto restore_names =
      g_.Strings("save/RestoreV2/tensor_names", names, {count});
  auto restore_slices =
      g_.Strings("save/RestoreV2/shape_and_slices", slices, {count});
  NodeDef* restore = g_.Add("save/RestoreV2", "RestoreV2",
                            {filename, restore_names, restore_slices});
  TfGraph::SetTypeList(restore, "dtypes", types);
  std::vector<std::string> assigns;
  for (size_t i = 0; i < names.size(); ++i) {
    NodeDef* assign =
        g_.Add(StrCat("save/AssignVariableOp_", i), "AssignVariableOp",
               {handles[i], TfOutput(restore->name(), static_cast<int>(i))});
    TfGraph::SetType(assign, "dtype", DT_FLOAT);
    assigns.push_back("^" + assign->name());
  }
  g_.Add("save/restore_all", "NoOp", std::move(assigns));

  auto save_names = g_.Strings("save/SaveV2/tensor_names", names, {count});
  auto save_slices =
      g_.Strings("save/SaveV2/shape_and_slices", slices, {count});
  std::vector<std::string> save_inputs = {filename, save_names, save_slices};
  save_inputs.insert(save_inputs.end(), reads.begin(), reads.end());
  NodeDef* save = g_.Add("save/SaveV2", "SaveV2", std::move(save_inputs));
  TfGraph::SetTypeList(save, "dtypes", types);
  NodeDef* done = g_.Add("save/control_dependency", "Identity",
                         {filename, "^" + save->name()});
  TfGraph::SetType(done, "T", DT_STRING);
}

std::string SmBuilder::Range(const std::string& scope, const std::string& n) {
  const std::string zero = g_.Int64(StrCat(scope, "/range/start"), 0);
  const std::string one = g_.Int64(StrCat(scope, "/range/delta"), 1);
  return g_.Op(StrCat(scope, "/range"), "Range", {zero, n, one}, DT_INT64,
               "Tidx");
}

Status SmBuilder::RawInputs(tensorflow::SignatureDef* sig, std::string* n,
                            std::vector<SmColumn>* columns) {
  const std::string scope = "serving_default";
  std::vector<std::string> placeholders;
  std::vector<int64_t> dims;
  for (const FeatureParseSpec& s : sources_) {
    const DataType type = SmType(s.type);
    dims.push_back(Dimension(s.name));
    std::vector<int64_t> shape = {-1};
    if (dims.back() > 1) shape.push_back(dims.back());
    NodeDef* p = g_.Add(StrCat(scope, "/", s.name), "Placeholder");
    TfGraph::SetType(p, "dtype", type);
    TfGraph::SetShape(p, "shape", shape);
    SetInfo(&(*sig->mutable_inputs())[s.name], p->name(), type, shape);
    placeholders.push_back(p->name());
  }
  if (placeholders.empty()) {
    return InvalidArgumentError("the model reads no column");
  }
  NodeDef* size =
      g_.Add(StrCat(scope, "/batch_size"), "Size", {placeholders[0]});
  TfGraph::SetType(size, "T", SmType(sources_[0].type));
  TfGraph::SetType(size, "out_type", DT_INT64);
  const std::string base =
      dims[0] == 1 ? size->name()
                   : g_.Op(StrCat(scope, "/batch_rows"), "FloorDiv",
                           {size->name(),
                            g_.Int64(StrCat(scope, "/first_dim"), dims[0])},
                           DT_INT64);
  // Every input holds one row per row of the first: an Assert names one
  // that does not.
  std::vector<std::string> checks = {base};
  for (size_t i = 1; i < sources_.size(); ++i) {
    const std::string sc = StrCat(scope, "/", sources_[i].name);
    NodeDef* other = g_.Add(StrCat(sc, "/size"), "Size", {placeholders[i]});
    TfGraph::SetType(other, "T", SmType(sources_[i].type));
    TfGraph::SetType(other, "out_type", DT_INT64);
    const std::string expected =
        dims[i] == 1
            ? base
            : g_.Op(StrCat(sc, "/expected_size"), "Mul",
                    {base, g_.Int64(StrCat(sc, "/dim"), dims[i])}, DT_INT64);
    const std::string same = g_.Op(StrCat(sc, "/same_size"), "Equal",
                                   {other->name(), expected}, DT_INT64);
    const std::string message =
        g_.String(StrCat(sc, "/size_message"),
                  StrCat("input \"", sources_[i].name,
                         "\" holds another number of rows than input \"",
                         sources_[0].name, "\""));
    NodeDef* check =
        g_.Add(StrCat(sc, "/size_assert"), "Assert", {same, message});
    const DataType message_type[] = {DT_STRING};
    TfGraph::SetTypeList(check, "T", message_type);
    TfGraph::SetInt(check, "summarize", 3);
    checks.push_back("^" + check->name());
  }
  *n = g_.Op(StrCat(scope, "/rows"), "Identity", std::move(checks), DT_INT64);
  const std::string rows = Range(scope, *n);
  for (size_t i = 0; i < sources_.size(); ++i) {
    const FeatureParseSpec& s = sources_[i];
    const std::string sc = StrCat(scope, "/", s.name);
    const DataType type = SmType(s.type);
    const std::string& x = placeholders[i];
    if (dims[i] > 1) {
      // A vector: [n, d] as it is, each value's row and place.
      const std::string d = g_.Int64(StrCat(sc, "/dim_value"), dims[i]);
      const std::string zero = g_.Int64(StrCat(sc, "/zero"), 0);
      const std::string one = g_.Int64(StrCat(sc, "/one"), 1);
      auto grid = [&](const std::string& name, const std::string& range,
                      const std::string& other, int32_t axis) {
        const std::string expanded = g_.Op(
            StrCat(sc, "/", name, "_expanded"), "ExpandDims",
            {range, g_.Int32(StrCat(sc, "/", name, "_axis"), axis)}, DT_INT64);
        std::vector<std::string> m = {other, one};
        if (axis == 1) std::swap(m[0], m[1]);
        NodeDef* tile =
            g_.Add(StrCat(sc, "/", name, "_tile"), "Tile",
                   {expanded,
                    g_.Pack(StrCat(sc, "/", name, "_multiples"), m, DT_INT64)});
        TfGraph::SetType(tile, "T", DT_INT64);
        TfGraph::SetType(tile, "Tmultiples", DT_INT64);
        return g_.Reshape(StrCat(sc, "/", name), tile->name(), {-1}, DT_INT64);
      };
      const std::string places_range =
          g_.Op(StrCat(sc, "/places_range"), "Range", {zero, d, one}, DT_INT64,
                "Tidx");
      columns->push_back(SmColumn{
          g_.Reshape(StrCat(sc, "/values"), x, {-1}, type),
          grid("rows", rows, d, 1), type, grid("places", places_range, *n, 0)});
      continue;
    }
    const ColumnSpec* spec = job_.schema.FindColumn(s.name);
    std::string missing;  // bool [n]: a missing cell
    if (type == DT_STRING) {
      std::vector<std::string> tokens = {""};
      for (const std::string& t : job_.schema.missing_values) {
        if (!t.empty()) tokens.push_back(t);
      }
      for (size_t k = 0; k < tokens.size(); ++k) {
        const std::string token =
            g_.String(StrCat(sc, "/missing_token_", k), tokens[k]);
        NodeDef* eq =
            g_.Add(StrCat(sc, "/is_missing_", k), "Equal", {x, token});
        TfGraph::SetType(eq, "T", DT_STRING);
        TfGraph::SetBool(eq, "incompatible_shape_error", true);
        missing = missing.empty() ? eq->name()
                                  : g_.Add(StrCat(sc, "/missing_or_", k),
                                           "LogicalOr", {missing, eq->name()})
                                        ->name();
      }
    } else if (type == DT_FLOAT) {
      missing = g_.Op(StrCat(sc, "/is_nan"), "IsNan", {x}, DT_FLOAT);
    }
    if (missing.empty()) {
      columns->push_back(SmColumn{x, rows, type, ""});
      continue;
    }
    if (spec != nullptr && spec->default_value) {
      std::string fill;
      if (type == DT_STRING) {
        fill = g_.String(StrCat(sc, "/default"),
                         std::get<std::string>(*spec->default_value));
      } else {
        fill = g_.Float(
            StrCat(sc, "/default"),
            static_cast<float>(std::get<double>(*spec->default_value)));
      }
      const std::string v =
          g_.Op(StrCat(sc, "/filled"), "SelectV2", {missing, fill, x}, type);
      columns->push_back(SmColumn{v, rows, type, ""});
      continue;
    }
    const std::string present =
        g_.Add(StrCat(sc, "/present"), "LogicalNot", {missing})->name();
    const std::string where =
        g_.Op(StrCat(sc, "/where"), "Where", {present}, DT_BOOL);
    const std::string keep =
        g_.Reshape(StrCat(sc, "/keep"), where, {-1}, DT_INT64);
    columns->push_back(SmColumn{
        g_.Gather(StrCat(sc, "/values"), x, keep, type),
        g_.Gather(StrCat(sc, "/rows"), rows, keep, DT_INT64), type, ""});
  }
  return OkStatus();
}

void SmBuilder::ExampleInputs(tensorflow::SignatureDef* sig, std::string* n,
                              std::vector<SmColumn>* columns) {
  const std::string scope = "examples";
  NodeDef* p = g_.Add("input_example_tensor", "Placeholder");
  TfGraph::SetType(p, "dtype", DT_STRING);
  const int64_t unknown[] = {-1};
  TfGraph::SetShape(p, "shape", unknown);
  SetInfo(&(*sig->mutable_inputs())["inputs"], p->name(), DT_STRING, {-1});
  NodeDef* size = g_.Add(StrCat(scope, "/batch_size"), "Size", {p->name()});
  TfGraph::SetType(size, "T", DT_STRING);
  TfGraph::SetType(size, "out_type", DT_INT64);
  *n = size->name();

  std::vector<std::string> keys;
  std::vector<DataType> types;
  for (const FeatureParseSpec& s : sources_) {
    keys.push_back(s.name);
    types.push_back(SmType(s.type));
  }
  const auto k = static_cast<int64_t>(keys.size());
  const std::vector<std::string> none;
  const std::string names = g_.Strings(StrCat(scope, "/names"), none, {0});
  const std::string sparse_keys =
      g_.Strings(StrCat(scope, "/sparse_keys"), keys, {k});
  const std::string dense_keys =
      g_.Strings(StrCat(scope, "/dense_keys"), none, {0});
  const std::string ragged_keys =
      g_.Strings(StrCat(scope, "/ragged_keys"), none, {0});
  NodeDef* parse =
      g_.Add(StrCat(scope, "/ParseExampleV2"), "ParseExampleV2",
             {p->name(), names, sparse_keys, dense_keys, ragged_keys});
  TfGraph::SetTypeList(parse, "Tdense", {});
  TfGraph::SetInt(parse, "num_sparse", k);
  TfGraph::SetTypeList(parse, "sparse_types", types);
  TfGraph::SetTypeList(parse, "ragged_value_types", {});
  TfGraph::SetTypeList(parse, "ragged_split_types", {});
  (*parse->mutable_attr())["dense_shapes"].mutable_list();
  for (int64_t i = 0; i < k; ++i) {
    const std::string& name = keys[static_cast<size_t>(i)];
    const std::string indices = TfOutput(parse->name(), static_cast<int>(i));
    const std::string values = TfOutput(parse->name(), static_cast<int>(k + i));
    const std::string rows = g_.Gather(
        StrCat(scope, "/", name, "/rows"), indices,
        g_.Int64(StrCat(scope, "/", name, "/row_column"), 0), DT_INT64, 1);
    const std::string places = g_.Gather(
        StrCat(scope, "/", name, "/places"), indices,
        g_.Int64(StrCat(scope, "/", name, "/place_column"), 1), DT_INT64, 1);
    columns->push_back(
        SmColumn{values, rows, types[static_cast<size_t>(i)], places});
  }
}

// The values of numeric feature `feature` in each of the n rows, as float
// [n, dimension]: the record's values, else the feature's default; a graph
// Assert fails the batch for a record with no value and no default, or with
// another number of values than the dimension.
std::string SmBuilder::NumericValues(const std::string& scope, size_t feature,
                                     const std::string& n,
                                     const SmColumn& column) {
  const NumericFeature& f = job_.features.numeric[feature];
  const int64_t d = f.dimension;
  const std::string sc = StrCat(scope, "/numeric/", f.name);
  std::string values = column.values;
  if (column.type != DT_FLOAT) {
    values = g_.Cast(StrCat(sc, "/to_float"), values, column.type, DT_FLOAT);
  }
  const std::string places =
      d == 1 || column.places.empty()
          ? g_.Op(StrCat(sc, "/places"), "ZerosLike", {column.rows}, DT_INT64)
          : column.places;
  const std::string indices =
      g_.Pack(StrCat(sc, "/indices"), {column.rows, places}, DT_INT64, 1);
  const std::string shape =
      g_.Pack(StrCat(sc, "/shape"), {n, g_.Int64(StrCat(sc, "/dimension"), d)},
              DT_INT64);
  NodeDef* sum =
      g_.Add(StrCat(sc, "/sum"), "ScatterNd", {indices, values, shape});
  TfGraph::SetType(sum, "T", DT_FLOAT);
  TfGraph::SetType(sum, "Tindices", DT_INT64);
  const std::string rows =
      g_.Op(StrCat(sc, "/rows"), "ExpandDims",
            {column.rows, g_.Int32(StrCat(sc, "/axis"), 1)}, DT_INT64);
  NodeDef* count =
      g_.Add(StrCat(sc, "/count"), "ScatterNd",
             {rows, g_.Op(StrCat(sc, "/ones"), "OnesLike", {values}, DT_FLOAT),
              g_.Reshape(StrCat(sc, "/rows_shape"), n, {1}, DT_INT64)});
  TfGraph::SetType(count, "T", DT_FLOAT);
  TfGraph::SetType(count, "Tindices", DT_INT64);
  const std::string zero = g_.Float(StrCat(sc, "/zero"), 0.0f);
  const std::string present =
      g_.Op(StrCat(sc, "/present"), "Greater", {count->name(), zero}, DT_FLOAT);
  std::string ok =
      g_.Op(StrCat(sc, "/complete"), "Equal",
            {count->name(), g_.Float(StrCat(sc, "/values_per_row"), float(d))},
            DT_FLOAT);
  if (f.default_value) {
    const std::string none =
        g_.Op(StrCat(sc, "/none"), "Equal", {count->name(), zero}, DT_FLOAT);
    ok = g_.Add(StrCat(sc, "/complete_or_none"), "LogicalOr", {ok, none})
             ->name();
  }
  NodeDef* all = g_.Add(StrCat(sc, "/all_ok"), "All",
                        {ok, g_.Int32(StrCat(sc, "/all_axis"), 0)});
  TfGraph::SetType(all, "Tidx", DT_INT32);
  TfGraph::SetBool(all, "keep_dims", false);
  const std::string message = g_.String(
      StrCat(sc, "/message"),
      StrCat("numeric feature \"", f.name, "\": a record holds ",
             f.default_value ? "" : "no value or ", "a number of values of \"",
             f.source, "\" other than ", d,
             f.default_value ? "" : ", and the feature sets no default"));
  NodeDef* check =
      g_.Add(StrCat(sc, "/Assert"), "Assert", {all->name(), message});
  const DataType message_type[] = {DT_STRING};
  TfGraph::SetTypeList(check, "T", message_type);
  TfGraph::SetInt(check, "summarize", 3);
  const std::string fill =
      g_.Float(StrCat(sc, "/default"),
               f.default_value ? static_cast<float>(*f.default_value) : 0.0f);
  const std::string value = g_.Op(
      StrCat(sc, "/value"), "SelectV2",
      {g_.Op(StrCat(sc, "/present_row"), "ExpandDims",
             {present, g_.Int32(StrCat(sc, "/present_axis"), 1)}, DT_BOOL),
       sum->name(), fill},
      DT_FLOAT);
  return g_.Op(StrCat(sc, "/checked"), "Identity", {value, "^" + check->name()},
               DT_FLOAT);
}

StatusOr<std::vector<SmIds>> SmBuilder::SparseIdsOf(
    const std::string& scope, const std::string& n,
    const std::vector<SmColumn>& columns,
    const std::vector<std::string>& raw_numeric) {
  const FeatureSpec& fs = job_.features;
  std::vector<SmIds> out;
  auto column_of = [&](const std::string& source) -> const SmColumn& {
    return columns[static_cast<size_t>(SourceIndex(source))];
  };
  // Integers as their decimal text, as dtf's vocabularies and hashes read
  // them.
  auto keys_of = [&](const std::string& sc, const SmColumn& c) {
    if (c.type == DT_STRING) return c.values;
    return g_.Op(StrCat(sc, "/as_string"), "AsString", {c.values}, c.type);
  };
  auto hash = [&](const std::string& name, const std::string& keys,
                  int64_t buckets) {
    NodeDef* node = g_.Add(name, "StringToHashBucketFast", {keys});
    TfGraph::SetInt(node, "num_buckets", buckets);
    return node->name();
  };
  for (size_t i = 0; i < fs.categorical.size(); ++i) {
    const CategoricalFeature& f = fs.categorical[i];
    const std::string sc = StrCat(scope, "/categorical/", f.name);
    const SmColumn& c = column_of(f.source);
    const std::string keys = keys_of(sc, c);
    const std::string absent = g_.Int64(StrCat(sc, "/absent"), -1);
    NodeDef* find = g_.Add(StrCat(sc, "/lookup"), "LookupTableFindV2",
                           {tables_[i], keys, absent});
    TfGraph::SetType(find, "Tin", DT_STRING);
    TfGraph::SetType(find, "Tout", DT_INT64);
    if (f.num_oov_buckets > 0) {
      const std::string oov =
          g_.Op(StrCat(sc, "/oov"), "AddV2",
                {hash(StrCat(sc, "/oov_bucket"), keys, f.num_oov_buckets),
                 g_.Int64(StrCat(sc, "/vocabulary_size"),
                          static_cast<int64_t>(f.vocabulary.size()))},
                DT_INT64);
      const std::string unknown = g_.Op(StrCat(sc, "/unknown"), "Equal",
                                        {find->name(), absent}, DT_INT64);
      out.push_back(SmIds{g_.Op(StrCat(sc, "/ids"), "SelectV2",
                                {unknown, oov, find->name()}, DT_INT64),
                          c.rows});
      continue;
    }
    const std::string known =
        g_.Op(StrCat(sc, "/known"), "GreaterEqual",
              {find->name(), g_.Int64(StrCat(sc, "/zero"), 0)}, DT_INT64);
    const std::string keep = g_.Reshape(
        StrCat(sc, "/keep"),
        g_.Op(StrCat(sc, "/where"), "Where", {known}, DT_BOOL), {-1}, DT_INT64);
    out.push_back(
        SmIds{g_.Gather(StrCat(sc, "/ids"), find->name(), keep, DT_INT64),
              g_.Gather(StrCat(sc, "/rows"), c.rows, keep, DT_INT64)});
  }
  for (const HashedFeature& f : fs.hashed) {
    const std::string sc = StrCat(scope, "/hashed/", f.name);
    const SmColumn& c = column_of(f.source);
    out.push_back(
        SmIds{hash(StrCat(sc, "/ids"), keys_of(sc, c), f.buckets), c.rows});
  }
  for (const BucketizedFeature& f : fs.bucketized) {
    const std::string sc = StrCat(scope, "/bucketized/", f.name);
    std::string values;
    std::string rows;
    if (f.source_kind == InputKind::kFeature) {
      for (size_t k = 0; k < fs.numeric.size(); ++k) {
        if (fs.numeric[k].name == f.source) values = raw_numeric[k];
      }
      rows = Range(sc, n);
    } else {
      const SmColumn& c = column_of(f.source);
      values = c.type == DT_FLOAT ? c.values
                                  : g_.Cast(StrCat(sc, "/to_float"), c.values,
                                            c.type, DT_FLOAT);
      rows = c.rows;
    }
    std::vector<float> boundaries;
    for (double b : f.boundaries) boundaries.push_back(static_cast<float>(b));
    NodeDef* bucket = g_.Add(StrCat(sc, "/bucketize"), "Bucketize", {values});
    TfGraph::SetType(bucket, "T", DT_FLOAT);
    TfGraph::SetFloatList(bucket, "boundaries", boundaries);
    out.push_back(SmIds{
        g_.Cast(StrCat(sc, "/ids"), bucket->name(), DT_INT32, DT_INT64), rows});
  }
  for (const CrossedFeature& f : fs.crossed) {
    const std::string sc = StrCat(scope, "/crossed/", f.name);
    std::vector<std::string> indices, values, shapes;
    std::vector<DataType> types;
    const std::string shape = g_.Pack(
        StrCat(sc, "/shape"), {n, g_.Int64(StrCat(sc, "/one"), 1)}, DT_INT64);
    for (size_t k = 0; k < f.columns.size(); ++k) {
      const CrossInput& in = f.columns[k];
      std::string v;
      std::string rows;
      DataType type = DT_INT64;
      int found = -1;
      if (in.kind == InputKind::kFeature) {
        const auto& inputs = layer_.sparse_inputs();
        for (size_t s = 0; s < out.size(); ++s) {
          if (inputs[s].name == in.name) found = static_cast<int>(s);
        }
      }
      if (found >= 0) {
        v = out[static_cast<size_t>(found)].ids;
        rows = out[static_cast<size_t>(found)].rows;
      } else {
        const SmColumn& c = column_of(in.name);
        if (c.type == DT_FLOAT) {
          return InvalidArgumentError(StrCat("crossed feature \"", f.name,
                                             "\": float column \"", in.name,
                                             "\" cannot cross"));
        }
        v = c.values;
        rows = c.rows;
        type = c.type;
      }
      const std::string zeros =
          g_.Op(StrCat(sc, "/zeros_", k), "ZerosLike", {rows}, DT_INT64);
      indices.push_back(
          g_.Pack(StrCat(sc, "/indices_", k), {rows, zeros}, DT_INT64, 1));
      values.push_back(v);
      shapes.push_back(shape);
      types.push_back(type);
    }
    std::vector<std::string> inputs = indices;
    inputs.insert(inputs.end(), values.begin(), values.end());
    inputs.insert(inputs.end(), shapes.begin(), shapes.end());
    NodeDef* cross =
        g_.Add(StrCat(sc, "/SparseCross"), "SparseCross", std::move(inputs));
    TfGraph::SetInt(cross, "N", static_cast<int64_t>(f.columns.size()));
    TfGraph::SetBool(cross, "hashed_output", true);
    TfGraph::SetInt(cross, "num_buckets", f.buckets);
    TfGraph::SetInt(cross, "hash_key",
                    static_cast<int64_t>(kernels::kDefaultCrossHashKey));
    TfGraph::SetTypeList(cross, "sparse_types", types);
    TfGraph::SetTypeList(cross, "dense_types", {});
    TfGraph::SetType(cross, "out_type", DT_INT64);
    TfGraph::SetType(cross, "internal_type", DT_INT64);
    const std::string rows =
        g_.Gather(StrCat(sc, "/rows"), TfOutput(cross->name(), 0),
                  g_.Int64(StrCat(sc, "/row_column"), 0), DT_INT64, 1);
    out.push_back(SmIds{TfOutput(cross->name(), 1), rows});
  }
  for (const TextFeature& f : fs.text) {
    out.push_back(
        TextIds(StrCat(scope, "/text/", f.name), f, column_of(f.source)));
  }
  return out;
}

// A text feature's terms (lib/data/text_tokens.h) hashed: ASCII lower case,
// every run of characters other than ASCII letters, digits and non-ASCII
// characters made one space, split on spaces, unigrams then bigrams of each
// value.
SmIds SmBuilder::TextIds(const std::string& sc, const TextFeature& f,
                         const SmColumn& c) {
  NodeDef* lower = g_.Add(StrCat(sc, "/lower"), "StringLower", {c.values});
  TfGraph::SetString(lower, "encoding", "");
  NodeDef* spaced =
      g_.Add(StrCat(sc, "/separators"), "StaticRegexReplace", {lower->name()});
  TfGraph::SetString(spaced, "pattern", "[^a-z0-9\\x{80}-\\x{10ffff}]+");
  TfGraph::SetString(spaced, "rewrite", " ");
  TfGraph::SetBool(spaced, "replace_global", true);
  NodeDef* split =
      g_.Add(StrCat(sc, "/split"), "StringSplitV2",
             {spaced->name(), g_.String(StrCat(sc, "/whitespace"), "")});
  TfGraph::SetInt(split, "maxsplit", -1);
  // The tokens of each value as row splits.
  const std::string token_value =
      g_.Gather(StrCat(sc, "/token_value"), TfOutput(split->name(), 0),
                g_.Int64(StrCat(sc, "/value_column"), 0), DT_INT64, 1);
  NodeDef* values = g_.Add(StrCat(sc, "/values"), "Size", {c.values});
  TfGraph::SetType(values, "T", DT_STRING);
  TfGraph::SetType(values, "out_type", DT_INT64);
  NodeDef* counts =
      g_.Add(StrCat(sc, "/tokens_per_value"), "UnsortedSegmentSum",
             {g_.Op(StrCat(sc, "/ones"), "OnesLike", {token_value}, DT_INT64),
              token_value, values->name()});
  TfGraph::SetType(counts, "T", DT_INT64);
  TfGraph::SetType(counts, "Tindices", DT_INT64);
  TfGraph::SetType(counts, "Tnumsegments", DT_INT64);
  NodeDef* cumsum =
      g_.Add(StrCat(sc, "/cumsum"), "Cumsum",
             {counts->name(), g_.Int32(StrCat(sc, "/cumsum_axis"), 0)});
  TfGraph::SetType(cumsum, "T", DT_INT64);
  TfGraph::SetType(cumsum, "Tidx", DT_INT32);
  TfGraph::SetBool(cumsum, "exclusive", false);
  TfGraph::SetBool(cumsum, "reverse", false);
  const int64_t zero = 0;
  const std::string splits = g_.Concat(
      StrCat(sc, "/token_splits"),
      {g_.Int64s(StrCat(sc, "/first_split"), std::span(&zero, 1), {1}),
       cumsum->name()},
      DT_INT64, 0);
  NodeDef* ngrams = g_.Add(StrCat(sc, "/ngrams"), "StringNGrams",
                           {TfOutput(split->name(), 1), splits});
  TfGraph::SetString(ngrams, "separator", " ");
  auto* widths = (*ngrams->mutable_attr())["ngram_widths"].mutable_list();
  for (int w = 1; w <= f.ngrams; ++w) widths->add_i(w);
  TfGraph::SetString(ngrams, "left_pad", "");
  TfGraph::SetString(ngrams, "right_pad", "");
  TfGraph::SetInt(ngrams, "pad_width", 0);
  TfGraph::SetBool(ngrams, "preserve_short_sequences", false);
  TfGraph::SetType(ngrams, "Tsplits", DT_INT64);
  const std::string terms = TfOutput(ngrams->name(), 0);
  // The value, then the row, of each term.
  NodeDef* total = g_.Add(StrCat(sc, "/terms"), "Size", {terms});
  TfGraph::SetType(total, "T", DT_STRING);
  TfGraph::SetType(total, "out_type", DT_INT64);
  const std::string positions = Range(sc, total->name());
  NodeDef* bound = g_.Add(
      StrCat(sc, "/upper_bound"), "UpperBound",
      {g_.Reshape(StrCat(sc, "/sorted"), TfOutput(ngrams->name(), 1), {1, -1},
                  DT_INT64),
       g_.Reshape(StrCat(sc, "/positions"), positions, {1, -1}, DT_INT64)});
  TfGraph::SetType(bound, "T", DT_INT64);
  TfGraph::SetType(bound, "out_type", DT_INT64);
  const std::string value =
      g_.Op(StrCat(sc, "/term_value"), "Sub",
            {g_.Reshape(StrCat(sc, "/bound"), bound->name(), {-1}, DT_INT64),
             g_.Int64(StrCat(sc, "/one"), 1)},
            DT_INT64);
  NodeDef* hash = g_.Add(StrCat(sc, "/ids"), "StringToHashBucketFast", {terms});
  TfGraph::SetInt(hash, "num_buckets", f.buckets);
  return SmIds{hash->name(),
               g_.Gather(StrCat(sc, "/rows"), c.rows, value, DT_INT64)};
}

std::string SmBuilder::Combine(const std::string& scope,
                               const std::string& table, const SmIds& ids,
                               const std::string& n, bool mean) {
  NodeDef* node = g_.Add(scope,
                         mean ? "SparseSegmentMeanWithNumSegments"
                              : "SparseSegmentSumWithNumSegments",
                         {table, ids.ids, ids.rows, n});
  TfGraph::SetType(node, "T", DT_FLOAT);
  TfGraph::SetType(node, "Tidx", DT_INT64);
  TfGraph::SetType(node, "Tsegmentids", DT_INT64);
  TfGraph::SetType(node, "Tnumsegments", DT_INT64);
  TfGraph::SetBool(node, "sparse_gradient", false);
  return node->name();
}

StatusOr<std::string> SmBuilder::Logits(const std::string& scope,
                                        const std::string& n,
                                        const std::vector<SmColumn>& columns) {
  const FeatureSpec& fs = job_.features;
  const std::vector<DenseInput>& dense = layer_.dense_inputs();
  const std::vector<SparseInput>& sparse = layer_.sparse_inputs();
  const NormalizerStats& stats = layer_.normalizer();
  // Numeric features: raw values (for bucketized features), then normalized
  // into the deep and wide dense inputs.
  std::vector<std::string> raw(fs.numeric.size());
  std::vector<std::string> deep_parts, wide_parts;
  int64_t norm = 0;
  for (size_t f = 0; f < fs.numeric.size(); ++f) {
    const NumericFeature& nf = fs.numeric[f];
    const std::string sc = StrCat(scope, "/numeric/", nf.name);
    std::string v = NumericValues(
        scope, f, n, columns[static_cast<size_t>(SourceIndex(nf.source))]);
    // Bucketized features read a numeric feature of one value.
    if (nf.dimension == 1) {
      raw[f] = g_.Reshape(StrCat(sc, "/raw"), v, {-1}, DT_FLOAT);
    }
    if (nf.normalize) {
      const auto k = static_cast<size_t>(norm);
      const auto d = static_cast<size_t>(nf.dimension);
      const std::vector<float> mean(stats.mean.begin() + long(k),
                                    stats.mean.begin() + long(k + d));
      const std::vector<float> stddev(stats.stddev.begin() + long(k),
                                      stats.stddev.begin() + long(k + d));
      v = g_.Op(StrCat(sc, "/centered"), "Sub",
                {v, g_.Floats(StrCat(sc, "/mean"), mean, {nf.dimension})},
                DT_FLOAT);
      v = g_.Op(StrCat(sc, "/normalized"), "RealDiv",
                {v, g_.Floats(StrCat(sc, "/stddev"), stddev, {nf.dimension})},
                DT_FLOAT);
      norm += nf.dimension;
    }
    if (dense[f].deep_offset >= 0) deep_parts.push_back(v);
    if (dense[f].wide_offset >= 0) wide_parts.push_back(v);
  }
  DTF_ASSIGN_OR_RETURN(std::vector<SmIds> ids,
                       SparseIdsOf(scope, n, columns, raw));
  if (ids.size() != sparse.size()) {
    return InternalError(
        "the SavedModel's sparse inputs differ from the "
        "feature layer's");
  }
  const int64_t outputs = spec_.outputs();
  std::string logits;
  if (spec_.has_wide()) {
    const std::string sc = StrCat(scope, "/wide");
    if (!wide_parts.empty()) {
      const std::string x =
          wide_parts.size() == 1
              ? wide_parts[0]
              : g_.Concat(StrCat(sc, "/dense_inputs"), wide_parts, DT_FLOAT, 1);
      NodeDef* mm =
          g_.Add(StrCat(sc, "/dense"), "MatMul", {x, Read("wide/dense")});
      TfGraph::SetType(mm, "T", DT_FLOAT);
      TfGraph::SetBool(mm, "transpose_a", false);
      TfGraph::SetBool(mm, "transpose_b", false);
      logits = mm->name();
    }
    for (size_t s = 0; s < sparse.size(); ++s) {
      if (!sparse[s].wide) continue;
      const std::string part =
          Combine(StrCat(sc, "/", sparse[s].name),
                  Read(StrCat("wide/", sparse[s].name)), ids[s], n, false);
      logits = logits.empty() ? part
                              : g_.Op(StrCat(sc, "/add_", sparse[s].name),
                                      "AddV2", {logits, part}, DT_FLOAT);
    }
    if (logits.empty()) {
      const std::string shape =
          g_.Pack(StrCat(sc, "/zeros_shape"),
                  {n, g_.Int64(StrCat(sc, "/outputs"), outputs)}, DT_INT64);
      NodeDef* fill = g_.Add(StrCat(sc, "/zeros"), "Fill",
                             {shape, g_.Float(StrCat(sc, "/zero"), 0.0f)});
      TfGraph::SetType(fill, "T", DT_FLOAT);
      TfGraph::SetType(fill, "index_type", DT_INT64);
      logits = fill->name();
    }
    logits = g_.Op(StrCat(sc, "/logits"), "BiasAdd",
                   {logits, Read("wide/bias")}, DT_FLOAT);
  }
  if (!spec_.has_deep()) return logits;

  const std::string sc = StrCat(scope, "/deep");
  for (size_t s = 0; s < sparse.size(); ++s) {
    if (sparse[s].embedding <= 0) continue;
    deep_parts.push_back(
        Combine(StrCat(sc, "/", sparse[s].name, "/embedding"),
                Read(StrCat("deep/", sparse[s].name, "/embedding")), ids[s], n,
                sparse[s].combiner != kernels::Combiner::kSum));
  }
  std::string x = deep_parts.size() == 1 ? deep_parts[0]
                                         : g_.Concat(StrCat(sc, "/inputs"),
                                                     deep_parts, DT_FLOAT, 1);
  if (spec_.batch_norm) {
    const std::string bn = StrCat(sc, "/batch_norm");
    const std::string var = g_.Op(StrCat(bn, "/variance_epsilon"), "AddV2",
                                  {Read("deep/batch_norm/moving_variance"),
                                   g_.Float(StrCat(bn, "/epsilon"), 1e-3f)},
                                  DT_FLOAT);
    const std::string inv =
        g_.Op(StrCat(bn, "/rsqrt"), "Rsqrt", {var}, DT_FLOAT);
    const std::string scale =
        g_.Op(StrCat(bn, "/scale"), "Mul", {Read("deep/batch_norm/gamma"), inv},
              DT_FLOAT);
    x = g_.Op(StrCat(bn, "/centered"), "Sub",
              {x, Read("deep/batch_norm/moving_mean")}, DT_FLOAT);
    x = g_.Op(StrCat(bn, "/scaled"), "Mul", {x, scale}, DT_FLOAT);
    x = g_.Op(StrCat(bn, "/output"), "AddV2", {x, Read("deep/batch_norm/beta")},
              DT_FLOAT);
  }
  auto dense_layer = [&](const std::string& name, const std::string& input) {
    NodeDef* mm = g_.Add(StrCat(sc, "/", name, "/MatMul"), "MatMul",
                         {input, Read(StrCat("deep/", name, "/kernel"))});
    TfGraph::SetType(mm, "T", DT_FLOAT);
    TfGraph::SetBool(mm, "transpose_a", false);
    TfGraph::SetBool(mm, "transpose_b", false);
    return g_.Op(StrCat(sc, "/", name, "/BiasAdd"), "BiasAdd",
                 {mm->name(), Read(StrCat("deep/", name, "/bias"))}, DT_FLOAT);
  };
  for (size_t i = 0; i < spec_.hidden.size(); ++i) {
    const std::string name = StrCat("dense_", i);
    const std::string op = spec_.activation == Activation::kRelu   ? "Relu"
                           : spec_.activation == Activation::kTanh ? "Tanh"
                                                                   : "Sigmoid";
    x = g_.Op(StrCat(sc, "/", name, "/", op), op, {dense_layer(name, x)},
              DT_FLOAT);
  }
  const std::string deep = dense_layer("logits", x);
  if (!spec_.has_wide()) return deep;
  return g_.Op(StrCat(scope, "/logits"), "AddV2", {logits, deep}, DT_FLOAT);
}

void SmBuilder::Outputs(const std::string& scope, const std::string& logits,
                        const std::string& n, bool examples,
                        tensorflow::SignatureDef* sig) {
  auto& out = *sig->mutable_outputs();
  const int64_t k = spec_.outputs();
  if (spec_.loss == Loss::kSquaredError) {
    SetInfo(&out[examples ? "outputs" : "predictions"], logits, DT_FLOAT,
            {-1, 1});
    sig->set_method_name(examples ? "tensorflow/serving/regress"
                                  : "tensorflow/serving/predict");
    return;
  }
  std::string probabilities;
  std::string classes;
  int64_t columns = k;
  if (spec_.loss == Loss::kBinaryCrossentropy) {
    columns = 2;
    const std::string p =
        g_.Op(StrCat(scope, "/probability"), "Sigmoid", {logits}, DT_FLOAT);
    const std::string q =
        g_.Op(StrCat(scope, "/complement"), "Sub",
              {g_.Float(StrCat(scope, "/one"), 1.0f), p}, DT_FLOAT);
    probabilities =
        g_.Concat(StrCat(scope, "/probabilities"), {q, p}, DT_FLOAT, 1);
    const std::string positive =
        g_.Op(StrCat(scope, "/positive"), "GreaterEqual",
              {logits, g_.Float(StrCat(scope, "/zero"), 0.0f)}, DT_FLOAT);
    classes = g_.Reshape(
        StrCat(scope, "/classes"),
        g_.Cast(StrCat(scope, "/class"), positive, DT_BOOL, DT_INT64), {-1},
        DT_INT64);
  } else {
    probabilities =
        g_.Op(StrCat(scope, "/probabilities"), "Softmax", {logits}, DT_FLOAT);
    NodeDef* argmax = g_.Add(StrCat(scope, "/classes"), "ArgMax",
                             {logits, g_.Int32(StrCat(scope, "/axis"), 1)});
    TfGraph::SetType(argmax, "T", DT_FLOAT);
    TfGraph::SetType(argmax, "Tidx", DT_INT32);
    TfGraph::SetType(argmax, "output_type", DT_INT64);
    classes = argmax->name();
  }
  if (!examples) {
    SetInfo(&out["probabilities"], probabilities, DT_FLOAT, {-1, columns});
    SetInfo(&out["classes"], classes, DT_INT64, {-1});
    SetInfo(&out["logits"], logits, DT_FLOAT, {-1, k});
    sig->set_method_name("tensorflow/serving/predict");
    return;
  }
  // Classify: each row's class names beside their scores.
  std::vector<std::string> names(static_cast<size_t>(columns));
  for (size_t c = 0; c < names.size(); ++c) names[c] = StrCat(c);
  if (job_.schema.label) {
    std::vector<bool> named(names.size(), false);
    for (const auto& [text, id] : job_.schema.label->mapping) {
      if (id < 0 || static_cast<size_t>(id) >= names.size()) continue;
      const auto i = static_cast<size_t>(id);
      if (!named[i] || text.size() < names[i].size()) names[i] = text;
      named[i] = true;
    }
  }
  const std::string table =
      g_.Strings(StrCat(scope, "/class_names"), names, {1, columns});
  const std::string multiples =
      g_.Pack(StrCat(scope, "/multiples"),
              {n, g_.Int64(StrCat(scope, "/one_i"), 1)}, DT_INT64);
  NodeDef* tile =
      g_.Add(StrCat(scope, "/class_table"), "Tile", {table, multiples});
  TfGraph::SetType(tile, "T", DT_STRING);
  TfGraph::SetType(tile, "Tmultiples", DT_INT64);
  SetInfo(&out["classes"], tile->name(), DT_STRING, {-1, columns});
  SetInfo(&out["scores"], probabilities, DT_FLOAT, {-1, columns});
  sig->set_method_name("tensorflow/serving/classify");
}

Status SmBuilder::Build() {
  AddVariables();
  AddTables();
  AddSaver();
  tensorflow::MetaGraphDef* meta = saved_model_.add_meta_graphs();
  saved_model_.set_saved_model_schema_version(1);
  meta->mutable_meta_info_def()->add_tags("serve");
  auto& signatures = *meta->mutable_signature_def();

  std::string n;
  std::vector<SmColumn> columns;
  tensorflow::SignatureDef& predict = signatures["serving_default"];
  DTF_RETURN_IF_ERROR(RawInputs(&predict, &n, &columns));
  DTF_ASSIGN_OR_RETURN(std::string logits,
                       Logits("serving_default", n, columns));
  Outputs("serving_default", logits, n, false, &predict);

  columns.clear();
  const bool regress = spec_.loss == Loss::kSquaredError;
  tensorflow::SignatureDef& examples =
      signatures[regress ? "regress" : "classify"];
  ExampleInputs(&examples, &n, &columns);
  DTF_ASSIGN_OR_RETURN(logits, Logits("examples", n, columns));
  Outputs("examples", logits, n, true, &examples);

  tensorflow::SignatureDef& init = signatures[std::string(kSmInitSignature)];
  tensorflow::TensorInfo& op =
      (*init.mutable_outputs())[std::string(kSmInitSignature)];
  op.set_name(std::string(kSmInitOp));
  op.mutable_tensor_shape()->set_unknown_rank(true);

  tensorflow::SaverDef* saver = meta->mutable_saver_def();
  saver->set_filename_tensor_name("save/Const:0");
  saver->set_save_tensor_name("save/control_dependency:0");
  saver->set_restore_op_name("save/restore_all");
  saver->set_max_to_keep(5);
  saver->set_keep_checkpoint_every_n_hours(10000.0f);
  saver->set_version(tensorflow::SaverDef::V2);

  tensorflow::VersionDef* versions = g_.graph().mutable_versions();
  versions->set_producer(kSmGraphProducer);
  *meta->mutable_graph_def() = std::move(g_.graph());
  return OkStatus();
}

}  // namespace

Status CheckSavedModelExport(const JobFile& definition) {
  if (!definition.model) {
    return InvalidArgumentError("the job has no [model]");
  }
  const FeatureSpec& fs = definition.features;
  if (!fs.date.empty()) {
    return InvalidArgumentError(
        StrCat("date feature \"", fs.date[0].name,
               "\" has no SavedModel export (date parsing is not a stock "
               "TensorFlow op)"));
  }
  return OkStatus();
}

Status WriteSavedModel(const std::string& dir, const JobFile& definition,
                       const FeatureLayer& layer, const Model& model) {
  DTF_RETURN_IF_ERROR(CheckSavedModelExport(definition));
  SmBuilder builder(definition, layer, model);
  DTF_RETURN_IF_ERROR(builder.Build());
  std::error_code ec;
  fs::create_directories(fs::path(dir) / "variables", ec);
  if (ec) {
    return ErrnoToStatus(ec.value(),
                         StrCat("cannot create ", dir, "/variables"));
  }
  DTF_RETURN_IF_ERROR(WriteTfBundle(
      (fs::path(dir) / kSmVariablesPrefix).string(), builder.BundleTensors()));
  std::string bytes;
  if (!builder.saved_model().SerializeToString(&bytes)) {
    return InternalError("cannot serialize the SavedModel");
  }
  return WriteFileAtomically((fs::path(dir) / "saved_model.pb").string(),
                             bytes);
}

Status ExportSavedModel(const std::string& dir, const JobFile& definition,
                        const FeatureLayer& layer, const Model& model) {
  const fs::path target(dir);
  const fs::path parent =
      target.has_parent_path() ? target.parent_path() : fs::path(".");
  const fs::path staging =
      parent / StrCat(".", target.filename().string(), ".tmp-", getpid());
  std::error_code ec;
  fs::remove_all(staging, ec);
  Status status = WriteSavedModel(staging.string(), definition, layer, model);
  if (status.ok()) {
    const fs::path old =
        parent / StrCat(".", target.filename().string(), ".old-", getpid());
    fs::remove_all(old, ec);
    ec.clear();
    if (fs::exists(target)) fs::rename(target, old, ec);
    if (!ec) fs::rename(staging, target, ec);
    if (ec) {
      status = ErrnoToStatus(
          ec.value(), StrCat("cannot move the export into ", target.string()));
    }
    fs::remove_all(old, ec);
  }
  if (!status.ok()) fs::remove_all(staging, ec);
  return status;
}

}  // namespace dtf::runtime
