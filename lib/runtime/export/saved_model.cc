#include "lib/runtime/export/saved_model.h"

#include <unistd.h>

#include <filesystem>
#include <span>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/runtime/export/saved_model_builder.h"
#include "lib/runtime/export/tf_bundle.h"
#include "proto/saved_model.pb.h"

namespace dtf::runtime {
namespace saved_model_internal {

using tensorflow::DataType;
using tensorflow::DT_BOOL;
using tensorflow::DT_FLOAT;
using tensorflow::DT_INT32;
using tensorflow::DT_INT64;
using tensorflow::DT_STRING;
using tensorflow::NodeDef;

// The GraphDef version the graph is written for (TensorFlow 2.12's).
constexpr int kSmGraphProducer = 1286;
constexpr std::string_view kSmInitSignature = "__saved_model_init_op";

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

std::vector<TfBundleTensor> SmBuilder::BundleTensors() const {
  std::vector<TfBundleTensor> tensors;
  for (const Variable& v : model_.variables()) {
    tensors.push_back(TfBundleTensor{v.name, &v.value});
  }
  return tensors;
}

void SmBuilder::AddVariables() {
  // The whole shapes (a parameter-server worker's model holds only some
  // rows of its tables).
  for (const VariableSpec& v : model_.specs()) {
    NodeDef* handle = g_.Add(v.name, "VarHandleOp");
    TfGraph::SetType(handle, "dtype", DT_FLOAT);
    TfGraph::SetShape(handle, "shape", v.shape);
    TfGraph::SetString(handle, "shared_name", handle->name());
    TfGraph::SetString(handle, "container", "");
    handles_[v.name] = handle->name();
    NodeDef* read = g_.Add(StrCat(handle->name(), "/Read/ReadVariableOp"),
                           "ReadVariableOp", {handle->name()});
    TfGraph::SetType(read, "dtype", DT_FLOAT);
    reads_[v.name] = read->name();
  }
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

std::string SmBuilder::AssertAll(const std::string& sc, const std::string& ok,
                                 const std::string& message,
                                 const std::string& text) {
  NodeDef* all = g_.Add(StrCat(sc, "/all"), "All",
                        {ok, g_.Int32(StrCat(sc, "/all_axis"), 0)});
  TfGraph::SetType(all, "Tidx", DT_INT32);
  TfGraph::SetBool(all, "keep_dims", false);
  std::vector<std::string> inputs = {
      all->name(), g_.String(StrCat(sc, "/message"), message)};
  if (!text.empty()) {
    // The values where `ok` does not hold.
    const std::string bad = g_.Reshape(
        StrCat(sc, "/bad"),
        g_.Op(StrCat(sc, "/where"), "Where",
              {g_.Add(StrCat(sc, "/not"), "LogicalNot", {ok})->name()},
              DT_BOOL),
        {-1}, DT_INT64);
    inputs.push_back(g_.Gather(StrCat(sc, "/values"), text, bad, DT_STRING));
  }
  const std::vector<DataType> types(inputs.size() - 1, DT_STRING);
  NodeDef* check = g_.Add(StrCat(sc, "/Assert"), "Assert", std::move(inputs));
  TfGraph::SetTypeList(check, "T", types);
  TfGraph::SetInt(check, "summarize", 3);
  return check->name();
}

std::string SmBuilder::Combine(const std::string& scope,
                               const std::string& variable, const SmIds& ids,
                               const std::string& n, bool mean) {
  std::string rows = ids.ids;
  const int64_t num_ps = table_num_ps_;
  if (num_ps > 1) {
    // Row offset(i mod N) + i div N (saved_model_builder.h).
    int64_t table_rows = 0;
    for (const VariableSpec& v : model_.specs()) {
      if (v.name == variable) table_rows = v.shape[0];
    }
    std::vector<int64_t> offsets;
    int64_t offset = 0;
    for (int64_t p = 0; p < num_ps; ++p) {
      offsets.push_back(offset);
      offset += table_rows > p ? (table_rows - p + num_ps - 1) / num_ps : 0;
    }
    const std::string ps = g_.Int64(StrCat(scope, "/num_ps"), num_ps);
    const std::string owner =
        g_.Op(StrCat(scope, "/owner"), "FloorMod", {rows, ps}, DT_INT64);
    const std::string local =
        g_.Op(StrCat(scope, "/local_row"), "FloorDiv", {rows, ps}, DT_INT64);
    const std::string first =
        g_.Gather(StrCat(scope, "/first_row"),
                  g_.Int64s(StrCat(scope, "/offsets"), offsets, {num_ps}),
                  owner, DT_INT64);
    rows = g_.Op(StrCat(scope, "/row"), "AddV2", {first, local}, DT_INT64);
  }
  NodeDef* node = g_.Add(scope,
                         mean ? "SparseSegmentMeanWithNumSegments"
                              : "SparseSegmentSumWithNumSegments",
                         {Read(variable), rows, ids.rows, n});
  TfGraph::SetType(node, "T", DT_FLOAT);
  TfGraph::SetType(node, "Tidx", DT_INT64);
  TfGraph::SetType(node, "Tsegmentids", DT_INT64);
  TfGraph::SetType(node, "Tnumsegments", DT_INT64);
  TfGraph::SetBool(node, "sparse_gradient", false);
  return node->name();
}

std::string SmBuilder::Normalized(const std::string& sc, const std::string& v,
                                  int64_t offset, int64_t dimension) {
  const NormalizerStats& stats = layer_.normalizer();
  const auto size = static_cast<size_t>(dimension);
  const std::span<const float> mean(stats.mean.data() + offset, size);
  const std::span<const float> stddev(stats.stddev.data() + offset, size);
  const std::string centered =
      g_.Op(StrCat(sc, "/centered"), "Sub",
            {v, g_.Floats(StrCat(sc, "/mean"), mean, {dimension})}, DT_FLOAT);
  return g_.Op(
      StrCat(sc, "/normalized"), "RealDiv",
      {centered, g_.Floats(StrCat(sc, "/stddev"), stddev, {dimension})},
      DT_FLOAT);
}

std::vector<std::string> SmBuilder::NumericParts(
    const std::string& scope, const std::string& n,
    const std::vector<SmColumn>& columns, SmDenseParts* parts) {
  const FeatureSpec& fs = job_.features;
  const std::vector<DenseInput>& dense = layer_.dense_inputs();
  std::vector<std::string> raw(fs.numeric.size());
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
      v = Normalized(sc, v, parts->normalized, nf.dimension);
      parts->normalized += nf.dimension;
    }
    if (dense[f].deep_offset >= 0) parts->deep.push_back(v);
    if (dense[f].wide_offset >= 0) parts->wide.push_back(v);
  }
  return raw;
}

StatusOr<std::vector<SmDate>> SmBuilder::DateDenseParts(
    const std::string& scope, const std::string& n,
    const std::vector<SmColumn>& columns, SmDenseParts* parts) {
  const FeatureSpec& fs = job_.features;
  const std::vector<DenseInput>& dense = layer_.dense_inputs();
  std::vector<SmDate> dates;
  size_t next = fs.numeric.size();
  for (size_t i = 0; i < fs.date.size(); ++i) {
    const DateFeature& df = fs.date[i];
    DTF_ASSIGN_OR_RETURN(
        SmDate date,
        DateParts(scope, i, n,
                  columns[static_cast<size_t>(SourceIndex(df.source))]));
    for (DatePart part : df.parts) {
      const std::string name = StrCat(df.name, "/", DatePartName(part));
      if (IsCalendarPart(part) || next >= dense.size() ||
          dense[next].name != name) {
        continue;
      }
      const std::string sc = StrCat(scope, "/date/", name);
      const std::string v = Normalized(
          sc,
          g_.Reshape(StrCat(sc, "/column"), date.Part(part), {-1, 1}, DT_FLOAT),
          parts->normalized++, 1);
      if (dense[next].deep_offset >= 0) parts->deep.push_back(v);
      if (dense[next].wide_offset >= 0) parts->wide.push_back(v);
      ++next;
    }
    dates.push_back(std::move(date));
  }
  if (next != dense.size()) {
    return InternalError(
        "the SavedModel's dense inputs differ from the feature layer's");
  }
  return dates;
}

std::string SmBuilder::WideLogits(const std::string& scope,
                                  const std::string& n,
                                  const std::vector<std::string>& wide_parts,
                                  const std::vector<SmIds>& ids) {
  const std::vector<SparseInput>& sparse = layer_.sparse_inputs();
  const std::string sc = StrCat(scope, "/wide");
  std::string logits;
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
                StrCat("wide/", sparse[s].name), ids[s], n, false);
    logits = logits.empty() ? part
                            : g_.Op(StrCat(sc, "/add_", sparse[s].name),
                                    "AddV2", {logits, part}, DT_FLOAT);
  }
  if (logits.empty()) {
    const std::string shape = g_.Pack(
        StrCat(sc, "/zeros_shape"),
        {n, g_.Int64(StrCat(sc, "/outputs"), spec_.outputs())}, DT_INT64);
    NodeDef* fill = g_.Add(StrCat(sc, "/zeros"), "Fill",
                           {shape, g_.Float(StrCat(sc, "/zero"), 0.0f)});
    TfGraph::SetType(fill, "T", DT_FLOAT);
    TfGraph::SetType(fill, "index_type", DT_INT64);
    logits = fill->name();
  }
  return g_.Op(StrCat(sc, "/logits"), "BiasAdd", {logits, Read("wide/bias")},
               DT_FLOAT);
}

std::string SmBuilder::BatchNorm(const std::string& sc, std::string x) {
  const std::string bn = StrCat(sc, "/batch_norm");
  const std::string var = g_.Op(StrCat(bn, "/variance_epsilon"), "AddV2",
                                {Read("deep/batch_norm/moving_variance"),
                                 g_.Float(StrCat(bn, "/epsilon"), 1e-3f)},
                                DT_FLOAT);
  const std::string inv = g_.Op(StrCat(bn, "/rsqrt"), "Rsqrt", {var}, DT_FLOAT);
  const std::string scale =
      g_.Op(StrCat(bn, "/scale"), "Mul", {Read("deep/batch_norm/gamma"), inv},
            DT_FLOAT);
  x = g_.Op(StrCat(bn, "/centered"), "Sub",
            {x, Read("deep/batch_norm/moving_mean")}, DT_FLOAT);
  x = g_.Op(StrCat(bn, "/scaled"), "Mul", {x, scale}, DT_FLOAT);
  return g_.Op(StrCat(bn, "/output"), "AddV2",
               {x, Read("deep/batch_norm/beta")}, DT_FLOAT);
}

std::string SmBuilder::DenseLayer(const std::string& sc,
                                  const std::string& name,
                                  const std::string& input) {
  NodeDef* mm = g_.Add(StrCat(sc, "/", name, "/MatMul"), "MatMul",
                       {input, Read(StrCat("deep/", name, "/kernel"))});
  TfGraph::SetType(mm, "T", DT_FLOAT);
  TfGraph::SetBool(mm, "transpose_a", false);
  TfGraph::SetBool(mm, "transpose_b", false);
  return g_.Op(StrCat(sc, "/", name, "/BiasAdd"), "BiasAdd",
               {mm->name(), Read(StrCat("deep/", name, "/bias"))}, DT_FLOAT);
}

std::string SmBuilder::DeepLogits(const std::string& scope,
                                  const std::string& n,
                                  std::vector<std::string> deep_parts,
                                  const std::vector<SmIds>& ids) {
  const std::vector<SparseInput>& sparse = layer_.sparse_inputs();
  const std::string sc = StrCat(scope, "/deep");
  for (size_t s = 0; s < sparse.size(); ++s) {
    if (sparse[s].embedding <= 0) continue;
    deep_parts.push_back(Combine(StrCat(sc, "/", sparse[s].name, "/embedding"),
                                 StrCat("deep/", sparse[s].name, "/embedding"),
                                 ids[s], n,
                                 sparse[s].combiner != Combiner::kSum));
  }
  std::string x = deep_parts.size() == 1 ? deep_parts[0]
                                         : g_.Concat(StrCat(sc, "/inputs"),
                                                     deep_parts, DT_FLOAT, 1);
  if (spec_.batch_norm) x = BatchNorm(sc, x);
  for (size_t i = 0; i < spec_.hidden.size(); ++i) {
    const std::string name = StrCat("dense_", i);
    const std::string op = spec_.activation == Activation::kRelu   ? "Relu"
                           : spec_.activation == Activation::kTanh ? "Tanh"
                                                                   : "Sigmoid";
    x = g_.Op(StrCat(sc, "/", name, "/", op), op, {DenseLayer(sc, name, x)},
              DT_FLOAT);
  }
  return DenseLayer(sc, "logits", x);
}

StatusOr<std::string> SmBuilder::Logits(const std::string& scope,
                                        const std::string& n,
                                        const std::vector<SmColumn>& columns) {
  // Numeric features: raw values (for bucketized features), then normalized
  // into the deep and wide dense inputs; then the date features' real parts.
  SmDenseParts parts;
  const std::vector<std::string> raw = NumericParts(scope, n, columns, &parts);
  DTF_ASSIGN_OR_RETURN(std::vector<SmDate> dates,
                       DateDenseParts(scope, n, columns, &parts));
  DTF_ASSIGN_OR_RETURN(std::vector<SmIds> ids,
                       SparseIdsOf(scope, n, columns, raw, dates));
  if (ids.size() != layer_.sparse_inputs().size()) {
    return InternalError(
        "the SavedModel's sparse inputs differ from the "
        "feature layer's");
  }
  std::string logits;
  if (spec_.has_wide()) logits = WideLogits(scope, n, parts.wide, ids);
  if (!spec_.has_deep()) return logits;
  const std::string deep = DeepLogits(scope, n, std::move(parts.deep), ids);
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

  for (const SmAsset& asset : assets_) {
    tensorflow::AssetFileDef* def = meta->add_asset_file_def();
    SetInfo(def->mutable_tensor_info(), asset.tensor, DT_STRING, {});
    def->set_filename(asset.filename);
  }

  tensorflow::VersionDef* versions = g_.graph().mutable_versions();
  versions->set_producer(kSmGraphProducer);
  *meta->mutable_graph_def() = std::move(g_.graph());
  return OkStatus();
}

}  // namespace saved_model_internal

namespace {
namespace fs = std::filesystem;
constexpr std::string_view kSmVariablesPrefix = "variables/variables";
}  // namespace

Status CheckSavedModelExport(const JobFile& definition) {
  if (!definition.model) {
    return InvalidArgumentError("the job has no [model]");
  }
  return OkStatus();
}

Status WriteSavedModelGraph(const std::string& dir, const JobFile& definition,
                            const FeatureLayer& layer, const Model& model,
                            int table_num_ps) {
  DTF_RETURN_IF_ERROR(CheckSavedModelExport(definition));
  saved_model_internal::SmBuilder builder(definition, layer, model,
                                          table_num_ps);
  DTF_RETURN_IF_ERROR(builder.Build());
  std::error_code ec;
  fs::create_directories(fs::path(dir) / "variables", ec);
  if (ec) {
    return ErrnoToStatus(ec.value(),
                         StrCat("cannot create ", dir, "/variables"));
  }
  if (!builder.assets().empty()) {
    fs::create_directories(fs::path(dir) / "assets", ec);
    if (ec) {
      return ErrnoToStatus(ec.value(),
                           StrCat("cannot create ", dir, "/assets"));
    }
  }
  for (const saved_model_internal::SmAsset& asset : builder.assets()) {
    DTF_RETURN_IF_ERROR(WriteFileAtomically(
        (fs::path(dir) / "assets" / asset.filename).string(), asset.contents));
  }
  std::string bytes;
  if (!builder.saved_model().SerializeToString(&bytes)) {
    return InternalError("cannot serialize the SavedModel");
  }
  return WriteFileAtomically((fs::path(dir) / "saved_model.pb").string(),
                             bytes);
}

std::string SavedModelVariablesPrefix(const std::string& dir) {
  return (fs::path(dir) / kSmVariablesPrefix).string();
}

Status WriteSavedModel(const std::string& dir, const JobFile& definition,
                       const FeatureLayer& layer, const Model& model) {
  DTF_RETURN_IF_ERROR(CheckSavedModelExport(definition));
  // The variables first, saved_model.pb last.
  const saved_model_internal::SmBuilder builder(definition, layer, model);
  std::error_code ec;
  fs::create_directories(fs::path(dir) / "variables", ec);
  if (ec) {
    return ErrnoToStatus(ec.value(),
                         StrCat("cannot create ", dir, "/variables"));
  }
  DTF_RETURN_IF_ERROR(
      WriteTfBundle(SavedModelVariablesPrefix(dir), builder.BundleTensors()));
  return WriteSavedModelGraph(dir, definition, layer, model, 1);
}

Status ExportSavedModel(const std::string& dir, const JobFile& definition,
                        const FeatureLayer& layer, const Model& model) {
  return ReplaceDirectory(dir, [&](const std::string& staging) {
    return WriteSavedModel(staging, definition, layer, model);
  });
}

}  // namespace dtf::runtime
