// sharded_values JOB PREFIX NUM_PS OUT_DIR
//
// Restores the sharded checkpoint at PREFIX into NUM_PS parameter servers
// (ParamStore, in this process) as a restarted or resumed run's would, and
// writes every variable and optimizer slot they hold, whole and in global
// row order, for sharded_checkpoint_test.py: OUT_DIR/<n>.f32 (little-endian
// float32) for the n-th line of OUT_DIR/manifest.txt, which reads
// "KEY SPARSE DIM..." (KEY as the checkpoint names it, SPARSE 1 for a
// table partitioned by row id). Exits 1 with a message on any error.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lib/base/strings.h"
#include "lib/data/job_file.h"
#include "lib/runtime/checkpoint/checkpoint.h"
#include "lib/runtime/model/feature_layer.h"
#include "lib/runtime/model/model.h"
#include "lib/runtime/ps/param_store.h"

namespace dtf::runtime {
namespace {

struct Whole {
  std::vector<int64_t> shape;
  bool sparse = false;
  std::vector<float> values;
};

// Copies each piece into its variable's (or slot's) whole values.
class WholeSink final : public PieceSink {
 public:
  explicit WholeSink(std::map<std::string, Whole>* out) : out_(out) {}
  std::byte* Piece(const PieceInfo& info) override {
    const std::string key = info.slot.empty()
                                ? CheckpointVariableKey(info.name)
                                : CheckpointSlotKey(info.name, info.slot);
    Whole& w = (*out_)[key];
    w.shape.assign(info.shape.begin(), info.shape.end());
    w.sparse = !info.ids.empty() || w.sparse;
    int64_t size = 1;
    for (int64_t d : w.shape) size *= d;
    w.values.resize(size_t(size));
    pieces_.push_back({&w, info.cols, info.row_offset,
                       std::vector<int64_t>(info.ids.begin(), info.ids.end()),
                       std::vector<float>(size_t(info.rows * info.cols) + 1)});
    return reinterpret_cast<std::byte*>(pieces_.back().values.data());
  }
  void Finish() {
    for (const Pending& p : pieces_) {
      const int64_t rows = p.ids.empty() && p.cols > 0
                               ? int64_t(p.values.size() - 1) / p.cols
                               : int64_t(p.ids.size());
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t row = p.ids.empty() ? p.row_offset + r : p.ids[size_t(r)];
        std::memcpy(p.whole->values.data() + row * p.cols,
                    p.values.data() + r * p.cols, size_t(p.cols) * 4);
      }
    }
  }

 private:
  struct Pending {
    Whole* whole;
    int64_t cols;
    int64_t row_offset;
    std::vector<int64_t> ids;
    std::vector<float> values;
  };
  std::map<std::string, Whole>* out_;
  std::vector<Pending> pieces_;
};

Status Run(const std::string& job_path, const std::string& prefix, int num_ps,
           const std::string& out) {
  DTF_ASSIGN_OR_RETURN(const JobFile job, LoadJobFile(job_path, {}));
  DTF_ASSIGN_OR_RETURN(
      FeatureLayer layer,
      FeatureLayer::Create(job.schema, job.features, *job.model));
  DTF_ASSIGN_OR_RETURN(const std::vector<VariableSpec> layout,
                       Model::Layout(layer, *job.model));
  std::map<std::string, Whole> all;
  for (int p = 0; p < num_ps; ++p) {
    StoreOptions o;
    o.index = p;
    o.num_ps = num_ps;
    o.restore_from = prefix;
    DTF_ASSIGN_OR_RETURN(std::unique_ptr<ParamStore> store,
                         ParamStore::Create(job, o));
    GatherRequest request;
    request.slots = true;
    for (const VariableSpec& v : layout) {
      if (v.sparse) {
        request.sparse.push_back({v.name, {}, true});
      } else {
        request.dense.push_back(v.name);
      }
    }
    WholeSink sink(&all);
    DTF_RETURN_IF_ERROR(store->Gather(request, sink).status());
    sink.Finish();
  }
  std::ofstream manifest(out + "/manifest.txt");
  int n = 0;
  for (const auto& [key, w] : all) {
    bool sparse = false;
    for (const VariableSpec& v : layout) {
      const std::string slots = CheckpointSlotKey(v.name, "");
      const bool of_v = key == CheckpointVariableKey(v.name) ||
                        (key.starts_with(slots) &&
                         key.find('/', slots.size()) == std::string::npos);
      if (of_v && v.sparse) sparse = true;
    }
    manifest << key << " " << (sparse ? 1 : 0);
    for (int64_t d : w.shape) manifest << " " << d;
    manifest << "\n";
    std::ofstream f(StrCat(out, "/", n++, ".f32"), std::ios::binary);
    f.write(reinterpret_cast<const char*>(w.values.data()),
            std::streamsize(w.values.size() * 4));
    if (!f) return DataLossError(StrCat(out, ": cannot write"));
  }
  if (!manifest) return DataLossError(StrCat(out, "/manifest.txt"));
  return OkStatus();
}

}  // namespace
}  // namespace dtf::runtime

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: sharded_values JOB PREFIX NUM_PS OUT_DIR\n";
    return 2;
  }
  dtf::Status st =
      dtf::runtime::Run(argv[1], argv[2], std::atoi(argv[3]), argv[4]);
  if (!st.ok()) {
    std::cerr << "sharded_values: " << dtf::Message(st) << "\n";
    return 1;
  }
  return 0;
}
