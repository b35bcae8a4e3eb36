#include "lib/runtime/export/sharded_export.h"

#include <filesystem>
#include <utility>

#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/runtime/checkpoint/bundle.h"
#include "lib/runtime/checkpoint/checkpoint.h"
#include "lib/runtime/checkpoint/shard_writer.h"
#include "lib/runtime/export/export_names.h"
#include "lib/runtime/export/saved_model.h"

namespace dtf::runtime {
namespace fs = std::filesystem;
namespace {

// model.toml into `staging`, and the SavedModel's graph into its
// saved_model/ when the job can be expressed as one.
Status WriteDefinition(const std::string& staging, std::string_view model_toml,
                       const FeatureLayer& layer, const Model& model,
                       int num_ps) {
  const fs::path dir(staging);
  DTF_RETURN_IF_ERROR(
      WriteFileAtomically((dir / kModelToml).string(), model_toml));
  const std::string sm = (dir / kSavedModelDir).string();
  std::error_code ec;
  fs::create_directories(fs::path(sm) / "variables", ec);
  if (ec) {
    return ErrnoToStatus(ec.value(),
                         StrCat("cannot create ", sm, "/variables"));
  }
  StatusOr<JobFile> definition = LoadJobFile((dir / kModelToml).string());
  if (definition.ok() && CheckSavedModelExport(*definition).ok()) {
    return WriteSavedModelGraph(sm, *definition, layer, model, num_ps);
  }
  return OkStatus();
}

}  // namespace

Status CommitVariableShards(const std::string& prefix,
                            const FeatureLayer& layer, int num_ps,
                            const Bundle& extra,
                            std::vector<ShardedIndexEntries> shards) {
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<ShardWriter> own,
                       ShardWriter::Open(prefix, num_ps, num_ps + 1));
  Bundle chief = extra;
  if (layer.needs_normalizer() && !extra.GetFloats("normalizer/mean").ok()) {
    chief.AddFloats("normalizer/mean", layer.normalizer().mean);
    chief.AddFloats("normalizer/stddev", layer.normalizer().stddev);
  }
  chief.AddInt64s(std::string(kShardedNumPsEntry),
                  std::vector<int64_t>{num_ps});
  DTF_RETURN_IF_ERROR(own->AddBundle(chief));
  DTF_ASSIGN_OR_RETURN(ShardedIndexEntries entries, own->Finish());
  shards.push_back(std::move(entries));
  return CommitShardedBundle(prefix, shards);
}

Status ExportShardedModel(const std::string& dir, std::string_view model_toml,
                          const FeatureLayer& layer, const Model& model,
                          int num_ps, const WriteVariableShards& write) {
  return ReplaceDirectory(dir, [&](const std::string& staging) -> Status {
    DTF_RETURN_IF_ERROR(
        WriteDefinition(staging, model_toml, layer, model, num_ps));
    const std::string prefix = SavedModelVariablesPrefix(
        (fs::path(staging) / kSavedModelDir).string());
    DTF_ASSIGN_OR_RETURN(std::vector<ShardedIndexEntries> shards,
                         write(prefix));
    return CommitVariableShards(prefix, layer, num_ps, Bundle(),
                                std::move(shards));
  });
}

Status ExportShardedCopy(const std::string& dir, std::string_view model_toml,
                         const FeatureLayer& layer, const Model& model,
                         int num_ps, const std::string& best_prefix) {
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<ShardedCheckpointReader> best,
                       ShardedCheckpointReader::Open(best_prefix));
  const int n = best->num_shards();
  // The tables are laid out as the PS that wrote the best model held them,
  // which a run resumed on another number of PS no longer has.
  DTF_ASSIGN_OR_RETURN(const Bundle own, best->ReadUnsliced());
  DTF_ASSIGN_OR_RETURN(const std::vector<int64_t> written_by,
                       own.GetInt64s(std::string(kShardedNumPsEntry)));
  if (written_by.size() == 1 && written_by[0] >= 1) {
    num_ps = int(written_by[0]);
  }
  return ReplaceDirectory(dir, [&](const std::string& staging) -> Status {
    DTF_RETURN_IF_ERROR(
        WriteDefinition(staging, model_toml, layer, model, num_ps));
    const std::string prefix = SavedModelVariablesPrefix(
        (fs::path(staging) / kSavedModelDir).string());
    std::vector<std::pair<std::string, std::string>> files;
    for (int k = 0; k < n; ++k) {
      files.emplace_back(ShardedDataPath(best_prefix, k, n),
                         ShardedDataPath(prefix, k, n));
    }
    files.emplace_back(ShardedIndexPath(best_prefix), ShardedIndexPath(prefix));
    for (const auto& [from, to] : files) {
      std::error_code ec;
      fs::create_hard_link(from, to, ec);
      if (!ec) continue;
      fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
      if (ec) {
        return ErrnoToStatus(ec.value(),
                             StrCat("cannot copy ", from, " to ", to));
      }
    }
    return OkStatus();
  });
}

Status TableRows::Read(const std::string& name, int64_t table_rows,
                       std::span<const int64_t> ids,
                       kernels::Tensor* out) const {
  // Row offset(i mod N) + i div N (sharded_format.h).
  std::vector<int64_t> offsets(size_t(num_ps), 0);
  for (int p = 1; p < num_ps; ++p) {
    const int64_t prev =
        table_rows > p - 1 ? (table_rows - (p - 1) + num_ps - 1) / num_ps : 0;
    offsets[size_t(p)] = offsets[size_t(p - 1)] + prev;
  }
  std::vector<int64_t> rows(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= table_rows) {
      return OutOfRangeError(StrCat(reader->prefix(), ": \"", name,
                                    "\" has no row ", ids[i], " (it has ",
                                    table_rows, ")"));
    }
    rows[i] = offsets[size_t(ids[i] % num_ps)] + ids[i] / num_ps;
  }
  return reader->ReadRows(name, rows, out->data());
}

StatusOr<std::unique_ptr<TableRows>> LoadShardedVariables(
    const std::string& dir, FeatureLayer* layer, Model* model) {
  const std::string prefix =
      SavedModelVariablesPrefix((fs::path(dir) / kSavedModelDir).string());
  std::error_code ec;
  if (!fs::exists(ShardedIndexPath(prefix), ec)) {
    return NotFoundError(StrCat(dir, " holds no ", ShardedIndexPath(prefix)));
  }
  auto rows = std::make_unique<TableRows>();
  DTF_ASSIGN_OR_RETURN(rows->reader, ShardedCheckpointReader::Open(prefix));
  DTF_ASSIGN_OR_RETURN(const Bundle own, rows->reader->ReadUnsliced());
  DTF_ASSIGN_OR_RETURN(const std::vector<int64_t> num_ps,
                       own.GetInt64s(std::string(kShardedNumPsEntry)));
  if (num_ps.size() != 1 || num_ps[0] < 1) {
    return DataLossError(StrCat(ShardedIndexPath(prefix), ": ",
                                kShardedNumPsEntry, " is not a count"));
  }
  rows->num_ps = int(num_ps[0]);
  DTF_RETURN_IF_ERROR(RestoreNormalizerStats(own, layer));
  auto& vars = model->variables();
  for (size_t i = 0; i < vars.size(); ++i) {
    if (vars[i].sparse) continue;
    DTF_ASSIGN_OR_RETURN(kernels::Tensor t,
                         rows->reader->ReadFloats(vars[i].name));
    if (t.shape() != model->specs()[i].shape) {
      return FailedPreconditionError(
          StrCat(ShardedIndexPath(prefix), ": variable \"", vars[i].name,
                 "\" has another shape than model.toml's"));
    }
    vars[i].value = std::move(t);
  }
  return rows;
}

}  // namespace dtf::runtime
