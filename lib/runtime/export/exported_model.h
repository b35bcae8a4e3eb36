// Exported models (docs/formats/checkpoint.md).
//
// An exported model is a directory with model.toml (the [schema],
// [features] and [model] of the job, self-contained) and variables.dtf (a
// bundle of the variables and the normalizer statistics, as a checkpoint
// names them: lib/runtime/checkpoint/checkpoint.h): all `dtf predict` needs.
// Beside them, for jobs it can express, a TensorFlow SavedModel
// (saved_model.h).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "lib/base/status.h"
#include "lib/data/job_file.h"
#include "lib/runtime/export/export_names.h"
#include "lib/runtime/model/feature_layer.h"
#include "lib/runtime/model/model.h"

namespace dtf::runtime {

// Writes `dir` (replacing a previous export only once the new one is
// complete).
Status ExportModel(const std::string& dir, std::string_view model_toml,
                   const FeatureLayer& layer, const Model& model);

// Exports the model of the checkpoint at `checkpoint` to `dir`: its
// variables and normalizer statistics are restored into `layer` and `model`
// (built for the same job, on the host) first. Errors as Bundle::ReadFile,
// RestoreCheckpoint and ExportModel.
Status ExportCheckpoint(const std::string& checkpoint, const std::string& dir,
                        std::string_view model_toml, FeatureLayer* layer,
                        Model* model);

struct TableRows;  // sharded_export.h

struct LoadedModel {
  JobFile definition;  // model.toml, loaded
  FeatureLayer layer;
  std::unique_ptr<Model> model;
  // An export of a sharded run (sharded_export.h): where the rows of the
  // tables are read, batch by batch; `model`'s tables hold none. Null when
  // variables.dtf held every variable.
  std::shared_ptr<const TableRows> rows;
};
// Loads an exported model directory: variables.dtf, or without it the
// sharded bundle of saved_model/variables (LoadShardedVariables). Errors
// name the file.
StatusOr<LoadedModel> LoadExportedModel(const std::string& dir);

}  // namespace dtf::runtime
