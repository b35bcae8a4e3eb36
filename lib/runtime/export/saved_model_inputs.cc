// The SavedModel signatures' inputs: raw columns (serving_default) and
// serialized tf.Example records (classify / regress).
#include <utility>

#include "lib/runtime/export/saved_model_builder.h"

namespace dtf::runtime::saved_model_internal {

using tensorflow::DataType;
using tensorflow::DT_BOOL;
using tensorflow::DT_FLOAT;
using tensorflow::DT_INT32;
using tensorflow::DT_INT64;
using tensorflow::DT_STRING;
using tensorflow::NodeDef;

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

std::string SmBuilder::Range(const std::string& scope, const std::string& n) {
  const std::string zero = g_.Int64(StrCat(scope, "/range/start"), 0);
  const std::string one = g_.Int64(StrCat(scope, "/range/delta"), 1);
  return g_.Op(StrCat(scope, "/range"), "Range", {zero, n, one}, DT_INT64,
               "Tidx");
}

std::vector<std::string> SmBuilder::RawPlaceholders(
    const std::string& scope, tensorflow::SignatureDef* sig,
    std::vector<int64_t>* dims) {
  std::vector<std::string> placeholders;
  for (const FeatureParseSpec& s : sources_) {
    const DataType type = SmType(s.type);
    dims->push_back(Dimension(s.name));
    std::vector<int64_t> shape = {-1};
    if (dims->back() > 1) shape.push_back(dims->back());
    NodeDef* p = g_.Add(StrCat(scope, "/", s.name), "Placeholder");
    TfGraph::SetType(p, "dtype", type);
    TfGraph::SetShape(p, "shape", shape);
    SetInfo(&(*sig->mutable_inputs())[s.name], p->name(), type, shape);
    placeholders.push_back(p->name());
  }
  return placeholders;
}

std::string SmBuilder::RawRowCount(const std::string& scope,
                                   const std::vector<std::string>& placeholders,
                                   const std::vector<int64_t>& dims) {
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
  return g_.Op(StrCat(scope, "/rows"), "Identity", std::move(checks), DT_INT64);
}

SmColumn SmBuilder::VectorColumn(const std::string& sc, const std::string& x,
                                 DataType type, int64_t dim,
                                 const std::string& rows,
                                 const std::string& n) {
  const std::string d = g_.Int64(StrCat(sc, "/dim_value"), dim);
  const std::string zero = g_.Int64(StrCat(sc, "/zero"), 0);
  const std::string one = g_.Int64(StrCat(sc, "/one"), 1);
  auto grid = [&](const std::string& name, const std::string& range,
                  const std::string& other, int32_t axis) {
    const std::string expanded = g_.Op(
        StrCat(sc, "/", name, "_expanded"), "ExpandDims",
        {range, g_.Int32(StrCat(sc, "/", name, "_axis"), axis)}, DT_INT64);
    std::vector<std::string> m = {other, one};
    if (axis == 1) std::swap(m[0], m[1]);
    NodeDef* tile = g_.Add(
        StrCat(sc, "/", name, "_tile"), "Tile",
        {expanded, g_.Pack(StrCat(sc, "/", name, "_multiples"), m, DT_INT64)});
    TfGraph::SetType(tile, "T", DT_INT64);
    TfGraph::SetType(tile, "Tmultiples", DT_INT64);
    return g_.Reshape(StrCat(sc, "/", name), tile->name(), {-1}, DT_INT64);
  };
  const std::string places_range = g_.Op(StrCat(sc, "/places_range"), "Range",
                                         {zero, d, one}, DT_INT64, "Tidx");
  return SmColumn{g_.Reshape(StrCat(sc, "/values"), x, {-1}, type),
                  grid("rows", rows, d, 1), type,
                  grid("places", places_range, n, 0)};
}

std::string SmBuilder::MissingCells(const std::string& sc, const std::string& x,
                                    DataType type) {
  std::string missing;
  if (type == DT_STRING) {
    std::vector<std::string> tokens = {""};
    for (const std::string& t : job_.schema.missing_values) {
      if (!t.empty()) tokens.push_back(t);
    }
    for (size_t k = 0; k < tokens.size(); ++k) {
      const std::string token =
          g_.String(StrCat(sc, "/missing_token_", k), tokens[k]);
      NodeDef* eq = g_.Add(StrCat(sc, "/is_missing_", k), "Equal", {x, token});
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
  return missing;
}

SmColumn SmBuilder::CellColumn(const std::string& sc, const std::string& name,
                               const std::string& x, DataType type,
                               const std::string& rows) {
  const ColumnSpec* spec = job_.schema.FindColumn(name);
  const std::string missing = MissingCells(sc, x, type);
  if (missing.empty()) return SmColumn{x, rows, type, ""};
  if (spec != nullptr && spec->default_value) {
    std::string fill;
    if (type == DT_STRING) {
      fill = g_.String(StrCat(sc, "/default"),
                       std::get<std::string>(*spec->default_value));
    } else {
      fill =
          g_.Float(StrCat(sc, "/default"),
                   static_cast<float>(std::get<double>(*spec->default_value)));
    }
    const std::string v =
        g_.Op(StrCat(sc, "/filled"), "SelectV2", {missing, fill, x}, type);
    return SmColumn{v, rows, type, ""};
  }
  const std::string present =
      g_.Add(StrCat(sc, "/present"), "LogicalNot", {missing})->name();
  const std::string where =
      g_.Op(StrCat(sc, "/where"), "Where", {present}, DT_BOOL);
  const std::string keep =
      g_.Reshape(StrCat(sc, "/keep"), where, {-1}, DT_INT64);
  return SmColumn{g_.Gather(StrCat(sc, "/values"), x, keep, type),
                  g_.Gather(StrCat(sc, "/rows"), rows, keep, DT_INT64), type,
                  ""};
}

Status SmBuilder::RawInputs(tensorflow::SignatureDef* sig, std::string* n,
                            std::vector<SmColumn>* columns) {
  const std::string scope = "serving_default";
  std::vector<int64_t> dims;
  const std::vector<std::string> placeholders =
      RawPlaceholders(scope, sig, &dims);
  if (placeholders.empty()) {
    return InvalidArgumentError("the model reads no column");
  }
  *n = RawRowCount(scope, placeholders, dims);
  const std::string rows = Range(scope, *n);
  for (size_t i = 0; i < sources_.size(); ++i) {
    const FeatureParseSpec& s = sources_[i];
    const std::string sc = StrCat(scope, "/", s.name);
    const DataType type = SmType(s.type);
    columns->push_back(
        dims[i] > 1 ? VectorColumn(sc, placeholders[i], type, dims[i], rows, *n)
                    : CellColumn(sc, s.name, placeholders[i], type, rows));
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

}  // namespace dtf::runtime::saved_model_internal
