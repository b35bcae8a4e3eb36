#include "lib/runtime/export/exported_model.h"

#include <filesystem>
#include <utility>
#include <vector>

#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/kernels/optimizer.h"
#include "lib/runtime/checkpoint/bundle.h"
#include "lib/runtime/checkpoint/checkpoint.h"
#include "lib/runtime/export/saved_model.h"
#include "lib/runtime/export/sharded_export.h"

namespace dtf::runtime {
namespace fs = std::filesystem;

Status ExportModel(const std::string& dir, std::string_view model_toml,
                   const FeatureLayer& layer, const Model& model) {
  const Bundle bundle = MakeModelBundle(layer, model);
  return ReplaceDirectory(dir, [&](const std::string& staging_dir) {
    const fs::path staging(staging_dir);
    DTF_RETURN_IF_ERROR(
        WriteFileAtomically((staging / kModelToml).string(), model_toml));
    DTF_RETURN_IF_ERROR(bundle.WriteFile((staging / kVariablesFile).string()));
    // The SavedModel beside dtf's own files, for jobs it can express (a
    // model.toml that is no complete job, as tests of the training loop
    // give, has none).
    StatusOr<JobFile> definition = LoadJobFile((staging / kModelToml).string());
    if (definition.ok() && CheckSavedModelExport(*definition).ok()) {
      return WriteSavedModel((staging / kSavedModelDir).string(), *definition,
                             layer, model);
    }
    return OkStatus();
  });
}

Status ExportCheckpoint(const std::string& checkpoint, const std::string& dir,
                        std::string_view model_toml, FeatureLayer* layer,
                        Model* model) {
  DTF_ASSIGN_OR_RETURN(const Bundle bundle, Bundle::ReadFile(checkpoint));
  std::vector<kernels::OptimizerState> no_slots;
  TrainState state;
  DTF_RETURN_IF_ERROR(
      RestoreCheckpoint(bundle, layer, model, &no_slots, &state));
  return ExportModel(dir, model_toml, *layer, *model);
}

StatusOr<LoadedModel> LoadExportedModel(const std::string& dir) {
  const std::string toml = (fs::path(dir) / kModelToml).string();
  if (!fs::exists(toml)) {
    return NotFoundError(
        StrCat(dir, " is not an exported model (no ", kModelToml,
               "); `dtf train` writes one to <output_dir>/", kExportDir));
  }
  DTF_ASSIGN_OR_RETURN(JobFile definition, LoadJobFile(toml));
  if (!definition.model) {
    return InvalidArgumentError(StrCat(toml, ": no [model] table"));
  }
  DTF_ASSIGN_OR_RETURN(
      FeatureLayer layer,
      FeatureLayer::Create(definition.schema, definition.features,
                           *definition.model));
  const std::string variables = (fs::path(dir) / kVariablesFile).string();
  std::error_code ec;
  if (!fs::exists(variables, ec)) {
    // A sharded run's export: the tables' rows are read as batches need
    // them.
    DTF_ASSIGN_OR_RETURN(
        std::unique_ptr<Model> model,
        Model::Create(layer, *definition.model, 0, /*sparse_rows=*/false));
    StatusOr<std::unique_ptr<TableRows>> rows =
        LoadShardedVariables(dir, &layer, model.get());
    if (rows.status().code() == StatusCode::kNotFound) {
      return NotFoundError(StrCat(dir, " holds neither ", kVariablesFile,
                                  " nor a sharded ", kSavedModelDir,
                                  "/variables bundle"));
    }
    DTF_RETURN_IF_ERROR(rows.status());
    return LoadedModel{std::move(definition), std::move(layer),
                       std::move(model), std::move(*rows)};
  }
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<Model> model,
                       Model::Create(layer, *definition.model, 0));
  DTF_ASSIGN_OR_RETURN(Bundle bundle, Bundle::ReadFile(variables));
  DTF_RETURN_IF_ERROR(RestoreModelBundle(bundle, &layer, model.get()));
  return LoadedModel{std::move(definition), std::move(layer), std::move(model),
                     nullptr};
}

}  // namespace dtf::runtime
