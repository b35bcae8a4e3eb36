// The SavedModel graph's vocabulary tables: a HashTableV2 a categorical
// feature, filled by its init op from a file of assets/ (TensorFlow's
// vocabulary_file columns) or, for values a line cannot hold, from
// constants.
#include <algorithm>
#include <utility>

#include "lib/runtime/export/saved_model_builder.h"

namespace dtf::runtime::saved_model_internal {

using tensorflow::DT_INT64;
using tensorflow::DT_STRING;
using tensorflow::NodeDef;

namespace {

// TensorFlow's text-file initializer: the whole line is the key, its line
// number the value.
constexpr int64_t kWholeLine = -2;
constexpr int64_t kLineNumber = -1;

// True when each value reads back unchanged as one line of a text file:
// not empty (TensorFlow's reader may skip an empty line) and without a line
// break (nor a carriage return, which a reader may take for one).
bool FitsLines(const std::vector<std::string>& values) {
  return !values.empty() &&
         std::none_of(values.begin(), values.end(), [](const std::string& v) {
           return v.empty() || v.find_first_of("\r\n") != std::string::npos;
         });
}

// "vocabulary-<index>-<name>.txt", the name's characters other than ASCII
// letters, digits, '-', '_' and '.' replaced by '_'.
std::string AssetName(size_t index, const std::string& feature) {
  std::string name = feature;
  for (char& c : name) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                      (c >= '0' && c <= '9') || c == '-' || c == '_' ||
                      c == '.';
    if (!keep) c = '_';
  }
  return StrCat("vocabulary-", index, "-", name, ".txt");
}

}  // namespace

void SmBuilder::AddTables() {
  const std::vector<CategoricalFeature>& features = job_.features.categorical;
  for (size_t i = 0; i < features.size(); ++i) {
    const CategoricalFeature& f = features[i];
    const std::string scope = StrCat("vocabulary/", f.name);
    NodeDef* table = g_.Add(StrCat(scope, "/table"), "HashTableV2");
    TfGraph::SetType(table, "key_dtype", DT_STRING);
    TfGraph::SetType(table, "value_dtype", DT_INT64);
    TfGraph::SetString(table, "shared_name", table->name());
    TfGraph::SetString(table, "container", "");
    TfGraph::SetBool(table, "use_node_name_sharing", false);
    const auto size = static_cast<int64_t>(f.vocabulary.size());
    NodeDef* init = nullptr;
    if (FitsLines(f.vocabulary)) {
      SmAsset asset;
      asset.filename = AssetName(i, f.name);
      for (const std::string& v : f.vocabulary) {
        StrAppend(&asset.contents, v, "\n");
      }
      asset.tensor = g_.String(StrCat(scope, "/asset_path"), asset.filename);
      init =
          g_.Add(StrCat(scope, "/table_init"), "InitializeTableFromTextFileV2",
                 {table->name(), asset.tensor});
      TfGraph::SetInt(init, "key_index", kWholeLine);
      TfGraph::SetInt(init, "value_index", kLineNumber);
      TfGraph::SetInt(init, "vocab_size", size);
      TfGraph::SetString(init, "delimiter", "\t");
      TfGraph::SetInt(init, "offset", 0);
      assets_.push_back(std::move(asset));
    } else {
      std::vector<int64_t> ids(f.vocabulary.size());
      for (size_t k = 0; k < ids.size(); ++k) ids[k] = static_cast<int64_t>(k);
      const std::string keys =
          g_.Strings(StrCat(scope, "/keys"), f.vocabulary, {size});
      const std::string values =
          g_.Int64s(StrCat(scope, "/values"), ids, {size});
      init = g_.Add(StrCat(scope, "/table_init"), "InitializeTableV2",
                    {table->name(), keys, values});
      TfGraph::SetType(init, "Tkey", DT_STRING);
      TfGraph::SetType(init, "Tval", DT_INT64);
    }
    tables_.push_back(table->name());
    table_inits_.push_back(init->name());
  }
  std::vector<std::string> deps;
  for (const std::string& init : table_inits_) deps.push_back("^" + init);
  g_.Add(kSmInitOp, "NoOp", std::move(deps));
}

}  // namespace dtf::runtime::saved_model_internal
