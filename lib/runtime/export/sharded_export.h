// Exported models of runs whose variables stay on parameter servers
// (train.sharded_checkpoints; docs/formats/checkpoint.md): written from the
// parameter servers' shards as a stream, and read back a row at a time.
//
// Such an export holds model.toml and saved_model/ (saved_model.h) whose
// variables/ bundle is sharded as the parameter servers held the
// variables: each PS's data file, the chief's last (the normalizer
// statistics, meta/num_ps), one merged index. No variables.dtf: `dtf
// predict` reads the dense variables whole and each batch's rows of the
// embedding and wide weight tables from the bundle (ShardedCheckpointReader
// ::ReadRows), so a model larger than memory predicts.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/data/job_file.h"
#include "lib/kernels/tensor.h"
#include "lib/runtime/checkpoint/bundle.h"
#include "lib/runtime/checkpoint/sharded_checkpoint.h"
#include "lib/runtime/model/feature_layer.h"
#include "lib/runtime/model/model.h"

namespace dtf::runtime {

// Writes the variables/ bundle at `prefix` (SavedModelVariablesPrefix):
// has every PS write its shard and returns each one's index entries, the
// chief's last to come (num_ps + 1 shards in all).
using WriteVariableShards =
    std::function<StatusOr<std::vector<ShardedIndexEntries>>(
        const std::string& prefix)>;

// Writes `dir` (replacing a previous export only once the new one is
// complete): model.toml, saved_model.pb (from `layer` and `model`'s whole
// shapes, for tables on `num_ps` PS) and the variables, which `write` has
// the PS write; the chief adds its shard (`layer`'s normalizer,
// meta/num_ps) and commits the bundle.
Status ExportShardedModel(const std::string& dir, std::string_view model_toml,
                          const FeatureLayer& layer, const Model& model,
                          int num_ps, const WriteVariableShards& write);

// The same export made from a best model kept as such a bundle at
// `best_prefix` (its files copied, or hard-linked where the file system
// allows); its tables laid out for the PS count it records (meta/num_ps),
// `num_ps` when it records none.
Status ExportShardedCopy(const std::string& dir, std::string_view model_toml,
                         const FeatureLayer& layer, const Model& model,
                         int num_ps, const std::string& best_prefix);

// The chief's shard of such a bundle: `extra` (may be empty), the
// normalizer statistics of `layer` and meta/num_ps, written as shard
// `num_ps` of `num_ps + 1` at `prefix`, then the bundle committed with
// the PS's `shards`.
Status CommitVariableShards(const std::string& prefix,
                            const FeatureLayer& layer, int num_ps,
                            const Bundle& extra,
                            std::vector<ShardedIndexEntries> shards);

// Where the rows of an exported model's tables come from when they are
// read on demand.
struct TableRows {
  std::unique_ptr<ShardedCheckpointReader> reader;
  int num_ps = 1;

  // Reads rows `ids` of the sparse variable `name` ([ids.size(), cols]
  // into `out`).
  Status Read(const std::string& name, int64_t table_rows,
              std::span<const int64_t> ids, kernels::Tensor* out) const;
};

// For an export without variables.dtf whose saved_model/variables bundle
// is sharded: `model` (built with sparse_rows false) gets its dense
// variables and `layer` its normalizer; the returned TableRows reads the
// tables' rows. NotFound when `dir` holds no such bundle.
StatusOr<std::unique_ptr<TableRows>> LoadShardedVariables(
    const std::string& dir, FeatureLayer* layer, Model* model);

}  // namespace dtf::runtime
