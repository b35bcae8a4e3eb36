// The SavedModel export: the tensor bundle's table format read back here
// byte by byte, and the graph of an example job checked for its signatures,
// its stock ops and its saver. tests/interop/savedmodel_test.py runs the
// exports in TensorFlow.
#include "lib/runtime/export/saved_model.h"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "lib/data/crc32c.h"
#include "lib/runtime/export/tf_bundle.h"
#include "proto/saved_model.pb.h"
#include "proto/tensor_bundle.pb.h"
#include "tests/runtime/date_text_jobs.h"
#include "tests/runtime/runtime_testing.h"
#include "tests/testing/temp_dir.h"

namespace dtf::runtime {
namespace {

uint64_t ReadVarint(std::string_view s, size_t* at) {
  uint64_t v = 0;
  for (int shift = 0; *at < s.size(); shift += 7) {
    const auto b = static_cast<unsigned char>(s[(*at)++]);
    v |= uint64_t{b & 0x7fu} << shift;
    if (b < 0x80) return v;
  }
  ADD_FAILURE() << "truncated varint";
  return 0;
}

uint32_t Fixed32(std::string_view s, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) {
    v = (v << 8) | static_cast<unsigned char>(s[at + size_t(i)]);
  }
  return v;
}

// The entries of one block (checking its trailer) at `handle` in `file`.
std::vector<std::pair<std::string, std::string>> ReadBlock(
    std::string_view file, std::string_view handle) {
  size_t at = 0;
  const size_t offset = ReadVarint(handle, &at);
  const size_t size = ReadVarint(handle, &at);
  EXPECT_LE(offset + size + 5, file.size());
  const std::string_view block = file.substr(offset, size);
  EXPECT_EQ(file[offset + size], '\0') << "compressed block";
  EXPECT_EQ(crc32c::Unmask(Fixed32(file, offset + size + 1)),
            crc32c::Value(file.substr(offset, size + 1)));
  const uint32_t restarts = Fixed32(block, block.size() - 4);
  const size_t end = block.size() - 4 - 4 * size_t{restarts};
  std::vector<std::pair<std::string, std::string>> entries;
  std::string key;
  for (size_t p = 0; p < end;) {
    const size_t shared = ReadVarint(block, &p);
    const size_t fresh = ReadVarint(block, &p);
    const size_t value = ReadVarint(block, &p);
    key = key.substr(0, shared) + std::string(block.substr(p, fresh));
    p += fresh;
    entries.emplace_back(key, std::string(block.substr(p, value)));
    p += value;
  }
  // Every restart point starts an entry with no shared prefix.
  for (uint32_t r = 0; r < restarts; ++r) {
    size_t p = Fixed32(block, end + 4 * size_t{r});
    EXPECT_EQ(ReadVarint(block, &p), 0u);
  }
  return entries;
}

// Every entry of a table, through its footer and index block.
std::vector<std::pair<std::string, std::string>> ReadTable(
    std::string_view file) {
  EXPECT_GE(file.size(), 48u);
  const std::string_view footer = file.substr(file.size() - 48);
  EXPECT_EQ(
      uint64_t{Fixed32(footer, 40)} | (uint64_t{Fixed32(footer, 44)} << 32),
      0xdb4775248b80fb57ull);
  size_t at = 0;
  ReadVarint(footer, &at);
  ReadVarint(footer, &at);  // the meta-index block
  const size_t index_at = at;
  ReadVarint(footer, &at);
  ReadVarint(footer, &at);
  const auto index = ReadBlock(file, footer.substr(index_at, at - index_at));
  std::vector<std::pair<std::string, std::string>> entries;
  for (const auto& [last_key, handle] : index) {
    auto block = ReadBlock(file, handle);
    EXPECT_FALSE(block.empty());
    if (!block.empty()) {
      EXPECT_EQ(block.back().first, last_key);
    }
    entries.insert(entries.end(), block.begin(), block.end());
  }
  return entries;
}

// The ops the export may write.
const std::set<std::string> kStockOps = {
    "AddV2",
    "All",
    "ArgMax",
    "AsString",
    "Assert",
    "AssignVariableOp",
    "BiasAdd",
    "Bucketize",
    "Cast",
    "ConcatV2",
    "Const",
    "Cumsum",
    "Equal",
    "ExpandDims",
    "Fill",
    "FloorDiv",
    "FloorMod",
    "GatherV2",
    "Greater",
    "GreaterEqual",
    "HashTableV2",
    "Identity",
    "InitializeTableFromTextFileV2",
    "InitializeTableV2",
    "IsNan",
    "Less",
    "LessEqual",
    "LogicalAnd",
    "LogicalNot",
    "LogicalOr",
    "LookupTableFindV2",
    "MatMul",
    "Mul",
    "NoOp",
    "NotEqual",
    "OnesLike",
    "Pack",
    "ParseExampleV2",
    "Placeholder",
    "Range",
    "ReadVariableOp",
    "RealDiv",
    "RegexFullMatch",
    "Relu",
    "Reshape",
    "RestoreV2",
    "Rsqrt",
    "SaveV2",
    "ScatterNd",
    "SelectV2",
    "Sigmoid",
    "Size",
    "Softmax",
    "SparseCross",
    "SparseSegmentMeanWithNumSegments",
    "SparseSegmentSumWithNumSegments",
    "StaticRegexReplace",
    "StringLower",
    "StringNGrams",
    "StringSplitV2",
    "StringToHashBucketFast",
    "StringToNumber",
    "Sub",
    "Tanh",
    "Tile",
    "Unpack",
    "UnsortedSegmentJoin",
    "UnsortedSegmentSum",
    "UpperBound",
    "VarHandleOp",
    "Where",
    "ZerosLike",
};

TEST(TfTableTest, EntriesReadBackAcrossBlocks) {
  std::vector<std::pair<std::string, std::string>> entries;
  entries.emplace_back("", "header");
  for (int i = 0; i < 100; ++i) {
    entries.emplace_back(StrCat("deep/dense_", 100 + i, "/kernel"),
                         std::string(size_t(i % 7), char('a' + i % 26)));
  }
  for (size_t block_size : {size_t{64}, size_t{256 * 1024}}) {
    EXPECT_EQ(ReadTable(MakeTfTable(entries, block_size)), entries)
        << "block size " << block_size;
  }
  EXPECT_TRUE(ReadTable(MakeTfTable({})).empty());
}

TEST(TfBundleTest, IndexNamesEachTensorsBytesInTheData) {
  const kernels::Tensor a = kernels::Tensor::FromValues({2, 2}, {1, 2, 3, 4});
  const kernels::Tensor b = kernels::Tensor::FromValues({3}, {-1, 0.5f, 7});
  auto files = MakeTfBundle({{"wide/bias", &b}, {"deep/logits/kernel", &a}});
  ASSERT_TRUE(files.ok()) << files.status();
  const auto entries = ReadTable(files->index);
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].first, "");
  tensorflow::BundleHeaderProto header;
  ASSERT_TRUE(header.ParseFromString(entries[0].second));
  EXPECT_EQ(header.num_shards(), 1);
  EXPECT_EQ(header.endianness(), tensorflow::BundleHeaderProto::LITTLE);
  const std::map<std::string, const kernels::Tensor*> want = {
      {"deep/logits/kernel", &a}, {"wide/bias", &b}};
  EXPECT_EQ(entries[1].first, "deep/logits/kernel");
  EXPECT_EQ(entries[2].first, "wide/bias");
  for (size_t i = 1; i < entries.size(); ++i) {
    tensorflow::BundleEntryProto entry;
    ASSERT_TRUE(entry.ParseFromString(entries[i].second));
    const kernels::Tensor& t = *want.at(entries[i].first);
    EXPECT_EQ(entry.dtype(), tensorflow::DT_FLOAT);
    ASSERT_EQ(entry.shape().dim_size(), t.rank());
    for (int d = 0; d < t.rank(); ++d) {
      EXPECT_EQ(entry.shape().dim(d).size(), t.dim(d));
    }
    ASSERT_EQ(entry.size(), int64_t(t.size() * 4));
    const std::string bytes =
        files->data.substr(size_t(entry.offset()), size_t(entry.size()));
    EXPECT_EQ(bytes, std::string(reinterpret_cast<const char*>(t.data()),
                                 size_t(t.size() * 4)));
    EXPECT_EQ(crc32c::Unmask(entry.crc32c()), crc32c::Value(bytes));
  }
  EXPECT_FALSE(MakeTfBundle({{"x", &a}, {"x", &b}}).ok());
  EXPECT_FALSE(MakeTfBundle({{"", &a}}).ok());
}

TEST(SavedModelTest, ExportNeedsAModel) {
  JobFile job;
  EXPECT_EQ(CheckSavedModelExport(job).code(), StatusCode::kInvalidArgument);
  job.model = ModelSpec{};
  EXPECT_TRUE(CheckSavedModelExport(job).ok());
}

// A job's SavedModel as ExportSavedModel writes it into `dir`/sm.
struct Exported {
  std::string dir;
  std::set<std::string> variables;  // the model's variable names
  tensorflow::SavedModel sm;
};

// Exports `job` with freshly initialized variables (and `stats` as the
// normalizer's statistics when given) and reads saved_model.pb back.
void Export(const dtf::testing::TempDir& dir, const JobFile& job,
            const NormalizerStats* stats, Exported* out) {
  ASSERT_TRUE(CheckSavedModelExport(job).ok());
  auto layer = FeatureLayer::Create(job.schema, job.features, *job.model);
  ASSERT_TRUE(layer.ok()) << layer.status();
  if (stats != nullptr) {
    ASSERT_TRUE(layer->SetNormalizer(*stats).ok());
  }
  auto model = Model::Create(*layer, *job.model, 3);
  ASSERT_TRUE(model.ok()) << model.status();
  for (const Variable& v : (*model)->variables()) out->variables.insert(v.name);
  out->dir = dir.Join("sm");
  ASSERT_TRUE(ExportSavedModel(out->dir, job, *layer, **model).ok());
  ASSERT_TRUE(out->sm.ParseFromString(
      dtf::testing::ReadFile(StrCat(out->dir, "/saved_model.pb"))));
  ASSERT_EQ(out->sm.meta_graphs_size(), 1);
}

// The job file at `path`, loaded.
JobFile Load(const std::string& path) {
  auto job = LoadJobFile(path);
  EXPECT_TRUE(job.ok()) << job.status();
  return job.ok() ? *std::move(job) : JobFile{};
}

JobFile LoadTitanic(const dtf::testing::TempDir& dir) {
  auto path = testing::WriteExampleJob("titanic", dir);
  EXPECT_TRUE(path.ok()) << path.status();
  return path.ok() ? Load(*path) : JobFile{};
}

TEST(SavedModelTest, TitanicGraphHasItsSignaturesStockOpsAndSaver) {
  dtf::testing::TempDir dir;
  const JobFile job = LoadTitanic(dir);
  ASSERT_TRUE(job.model.has_value());
  Exported e;
  ASSERT_NO_FATAL_FAILURE(Export(dir, job, nullptr, &e));
  const std::string& out = e.dir;
  const tensorflow::MetaGraphDef& meta = e.sm.meta_graphs(0);
  ASSERT_EQ(meta.meta_info_def().tags_size(), 1);
  EXPECT_EQ(meta.meta_info_def().tags(0), "serve");

  const auto& sigs = meta.signature_def();
  ASSERT_TRUE(sigs.contains("serving_default"));
  ASSERT_TRUE(sigs.contains("classify"));
  ASSERT_TRUE(sigs.contains("__saved_model_init_op"));
  const tensorflow::SignatureDef& predict = sigs.at("serving_default");
  EXPECT_EQ(predict.method_name(), "tensorflow/serving/predict");
  std::map<std::string, tensorflow::DataType> inputs;
  for (const auto& [name, info] : predict.inputs()) inputs[name] = info.dtype();
  const std::map<std::string, tensorflow::DataType> want_inputs = {
      {"Age", tensorflow::DT_FLOAT},       {"SibSp", tensorflow::DT_INT64},
      {"Parch", tensorflow::DT_INT64},     {"Fare", tensorflow::DT_FLOAT},
      {"Sex", tensorflow::DT_STRING},      {"Pclass", tensorflow::DT_INT64},
      {"Embarked", tensorflow::DT_STRING}, {"Ticket", tensorflow::DT_STRING}};
  EXPECT_EQ(inputs, want_inputs);
  for (const char* key : {"probabilities", "classes", "logits"}) {
    EXPECT_TRUE(predict.outputs().contains(key)) << key;
  }
  const tensorflow::SignatureDef& classify = sigs.at("classify");
  EXPECT_EQ(classify.method_name(), "tensorflow/serving/classify");
  ASSERT_TRUE(classify.inputs().contains("inputs"));
  EXPECT_EQ(classify.inputs().at("inputs").dtype(), tensorflow::DT_STRING);
  EXPECT_TRUE(classify.outputs().contains("classes"));
  EXPECT_TRUE(classify.outputs().contains("scores"));

  // Every node is a stock op; every signature tensor is a node's output.

  std::set<std::string> nodes;
  for (const tensorflow::NodeDef& node : meta.graph_def().node()) {
    EXPECT_TRUE(kStockOps.contains(node.op()))
        << node.name() << ": " << node.op();
    EXPECT_TRUE(nodes.insert(node.name()).second) << node.name();
  }
  for (const auto& [key, sig] : sigs) {
    for (const auto* map : {&sig.inputs(), &sig.outputs()}) {
      for (const auto& [name, info] : *map) {
        const std::string node = info.name().substr(0, info.name().find(':'));
        EXPECT_TRUE(nodes.contains(node)) << key << "/" << name;
      }
    }
  }
  EXPECT_EQ(meta.saver_def().version(), tensorflow::SaverDef::V2);
  for (const std::string& name : {meta.saver_def().filename_tensor_name(),
                                  meta.saver_def().save_tensor_name(),
                                  meta.saver_def().restore_op_name()}) {
    EXPECT_TRUE(nodes.contains(name.substr(0, name.find(':')))) << name;
  }

  // Each vocabulary is a file of assets/, one value a line, whose name a
  // string constant of the graph holds for the loader to feed.
  ASSERT_FALSE(job.features.categorical.empty());
  ASSERT_EQ(meta.asset_file_def_size(),
            static_cast<int>(job.features.categorical.size()));
  std::set<std::string> filenames;
  for (int i = 0; i < meta.asset_file_def_size(); ++i) {
    const tensorflow::AssetFileDef& asset = meta.asset_file_def(i);
    std::string lines;
    for (const std::string& v :
         job.features.categorical[size_t(i)].vocabulary) {
      StrAppend(&lines, v, "\n");
    }
    EXPECT_EQ(dtf::testing::ReadFile(StrCat(out, "/assets/", asset.filename())),
              lines);
    EXPECT_TRUE(filenames.insert(asset.filename()).second);
    EXPECT_EQ(asset.tensor_info().dtype(), tensorflow::DT_STRING);
    const std::string& tensor = asset.tensor_info().name();
    EXPECT_TRUE(nodes.contains(tensor.substr(0, tensor.find(':')))) << tensor;
  }

  // The bundle holds every variable under its dtf name.
  const auto entries = ReadTable(
      dtf::testing::ReadFile(StrCat(out, "/variables/variables.index")));
  std::set<std::string> names;
  for (const auto& [key, value] : entries) {
    if (!key.empty()) names.insert(key);
  }
  EXPECT_EQ(names, e.variables);
}

// The ops of the graph, each checked to be a stock op.
std::set<std::string> StockOps(const tensorflow::SavedModel& sm) {
  std::set<std::string> ops;
  for (const tensorflow::NodeDef& node : sm.meta_graphs(0).graph_def().node()) {
    EXPECT_TRUE(kStockOps.contains(node.op()))
        << node.name() << ": " << node.op();
    ops.insert(node.op());
  }
  return ops;
}

TEST(SavedModelTest, TextFeaturesBecomeStockStringOps) {
  dtf::testing::TempDir dir;
  Exported e;
  ASSERT_NO_FATAL_FAILURE(
      Export(dir, Load(testing::WriteReviewJob(dir, 40)), nullptr, &e));
  const std::set<std::string> ops = StockOps(e.sm);
  for (const char* op : {"StringLower", "StaticRegexReplace", "StringSplitV2",
                         "StringNGrams", "UpperBound"}) {
    EXPECT_TRUE(ops.contains(op)) << op;
  }
}

// A date feature's parts come from stock string and arithmetic ops; each
// text form of format "auto" is matched, one per separator, and year and
// epoch_days are normalized with the layer's statistics.
TEST(SavedModelTest, DateFeaturesBecomeStockStringOps) {
  dtf::testing::TempDir dir;
  const NormalizerStats stats{{2021.5f, 19000.0f}, {1.1f, 420.0f}};
  Exported e;
  ASSERT_NO_FATAL_FAILURE(
      Export(dir, Load(testing::WriteDateJob(dir, 40)), &stats, &e));
  const tensorflow::SavedModel& sm = e.sm;
  const std::set<std::string> ops = StockOps(sm);
  for (const char* op :
       {"RegexFullMatch", "StaticRegexReplace", "StringToNumber",
        "UnsortedSegmentJoin", "FloorMod", "Assert"}) {
    EXPECT_TRUE(ops.contains(op)) << op;
  }
  std::set<std::string> patterns;
  std::set<float> means;
  for (const tensorflow::NodeDef& node : sm.meta_graphs(0).graph_def().node()) {
    if (node.op() != "Const" ||
        !node.name().starts_with("serving_default/date/when")) {
      continue;
    }
    const tensorflow::TensorProto& value = node.attr().at("value").tensor();
    if (node.name().ends_with("/pattern")) patterns.insert(value.string_val(0));
    if (node.name().ends_with("/mean")) means.insert(value.float_val(0));
  }
  // iso8601, compact, ymd with / and ., mdy with /, dmy with . (in
  // date_parse.cc's order, with its separators).
  EXPECT_EQ(patterns.size(), 6u);
  EXPECT_EQ(means, (std::set<float>{2021.5f, 19000.0f}));
  const auto& inputs =
      sm.meta_graphs(0).signature_def().at("serving_default").inputs();
  ASSERT_TRUE(inputs.contains("when"));
  EXPECT_EQ(inputs.at("when").dtype(), tensorflow::DT_STRING);
}

// A vocabulary a text file cannot hold line by line (a value with a line
// break, or an empty one) is a constant of the graph instead; the others
// stay files.
TEST(SavedModelTest, VocabularyWithALineBreakIsAConstant) {
  dtf::testing::TempDir dir;
  JobFile job = LoadTitanic(dir);
  ASSERT_GE(job.features.categorical.size(), 2u);
  job.features.categorical[0].vocabulary.push_back("two\nlines");
  job.features.categorical[1].vocabulary.push_back("");
  Exported e;
  ASSERT_NO_FATAL_FAILURE(Export(dir, job, nullptr, &e));
  const tensorflow::MetaGraphDef& meta = e.sm.meta_graphs(0);
  EXPECT_EQ(meta.asset_file_def_size(),
            static_cast<int>(job.features.categorical.size()) - 2);
  int constant = 0;
  for (const tensorflow::NodeDef& node : meta.graph_def().node()) {
    constant += node.op() == "InitializeTableV2";
  }
  EXPECT_EQ(constant, 2);
}

}  // namespace
}  // namespace dtf::runtime
