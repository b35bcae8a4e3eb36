#include "lib/runtime/checkpoint/checkpoint.h"

#include <unistd.h>

#include <filesystem>
#include <utility>

#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/runtime/export/saved_model.h"

namespace dtf::runtime {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kVarPrefix = "var/";
constexpr std::string_view kSlotPrefix = "slot/";

void AddNormalizer(const FeatureLayer& layer, Bundle* bundle) {
  if (!layer.needs_normalizer()) return;
  bundle->AddFloats("normalizer/mean", layer.normalizer().mean);
  bundle->AddFloats("normalizer/stddev", layer.normalizer().stddev);
}

Status RestoreNormalizer(const Bundle& bundle, FeatureLayer* layer) {
  if (!layer->needs_normalizer()) return OkStatus();
  NormalizerStats stats;
  DTF_ASSIGN_OR_RETURN(stats.mean, bundle.GetFloats("normalizer/mean"));
  DTF_ASSIGN_OR_RETURN(stats.stddev, bundle.GetFloats("normalizer/stddev"));
  Status status = layer->SetNormalizer(std::move(stats));
  if (!status.ok()) {
    return FailedPreconditionError(
        StrCat(bundle.path(), ": ", Message(status)));
  }
  return OkStatus();
}

Status RestoreTensor(const Bundle& bundle, const std::string& name,
                     kernels::Tensor* into) {
  StatusOr<kernels::Tensor> t = bundle.GetTensor(name);
  if (!t.ok()) {
    return FailedPreconditionError(
        StrCat(Message(t.status()), "; the checkpoint does not match the job"));
  }
  if (t->shape() != into->shape()) {
    return FailedPreconditionError(
        StrCat(bundle.path(), ": \"", name, "\" has shape ",
               kernels::ShapeString(t->shape()), ", the job's model needs ",
               kernels::ShapeString(into->shape()),
               "; the checkpoint does not match the job"));
  }
  *into = std::move(*t);
  return OkStatus();
}

Status RestoreVariables(const Bundle& bundle, Model* model) {
  for (Variable& v : model->variables()) {
    DTF_RETURN_IF_ERROR(
        RestoreTensor(bundle, StrCat(kVarPrefix, v.name), &v.value));
  }
  return OkStatus();
}

}  // namespace

Bundle MakeCheckpoint(const FeatureLayer& layer, const Model& model,
                      const std::vector<kernels::OptimizerState>& states,
                      const TrainState& state, std::string_view model_toml,
                      const CheckpointOrigin& origin) {
  Bundle bundle;
  bundle.AddString("meta/model_toml", model_toml);
  bundle.AddString(std::string(kCheckpointRunIdEntry), origin.run_id);
  bundle.AddString(std::string(kCheckpointFingerprintEntry),
                   origin.job_fingerprint);
  bundle.AddInt64s("train/global_step",
                   std::vector<int64_t>{state.global_step});
  if (!state.ps_steps.empty()) {
    bundle.AddInt64s(std::string(kCheckpointPsStepsEntry), state.ps_steps);
  }
  const InputPosition& p = state.position;
  bundle.AddInt64s(
      "train/input_position",
      std::vector<int64_t>{p.epoch, p.file, p.record, p.epoch_record});
  if (!state.worker_positions.empty()) {
    // -1 four times for a worker whose position is not known.
    std::vector<int64_t> positions;
    for (const std::optional<InputPosition>& w : state.worker_positions) {
      const InputPosition q = w.value_or(InputPosition{-1, -1, -1, -1});
      positions.insert(positions.end(),
                       {q.epoch, q.file, q.record, q.epoch_record});
    }
    bundle.AddInt64s(std::string(kCheckpointWorkerPositionsEntry), positions);
  }
  AddNormalizer(layer, &bundle);
  const auto& vars = model.variables();
  for (size_t i = 0; i < vars.size(); ++i) {
    bundle.AddTensor(StrCat(kVarPrefix, vars[i].name), vars[i].value);
    if (!vars[i].trainable || i >= states.size()) continue;
    const kernels::OptimizerState& s = states[i];
    bundle.AddInt64s(StrCat(kSlotPrefix, vars[i].name, "/step"),
                     std::vector<int64_t>{s.step()});
    for (int k = 0; k < s.num_slots(); ++k) {
      bundle.AddTensor(StrCat(kSlotPrefix, vars[i].name, "/", s.slot_name(k)),
                       s.slot(k));
    }
  }
  return bundle;
}

Status RestoreCheckpoint(const Bundle& bundle, FeatureLayer* layer,
                         Model* model,
                         std::vector<kernels::OptimizerState>* states,
                         TrainState* state) {
  DTF_RETURN_IF_ERROR(RestoreNormalizer(bundle, layer));
  DTF_RETURN_IF_ERROR(RestoreVariables(bundle, model));
  const auto& vars = model->variables();
  for (size_t i = 0; i < vars.size() && i < states->size(); ++i) {
    if (!vars[i].trainable) continue;
    kernels::OptimizerState& s = (*states)[i];
    for (int k = 0; k < s.num_slots(); ++k) {
      DTF_RETURN_IF_ERROR(RestoreTensor(
          bundle, StrCat(kSlotPrefix, vars[i].name, "/", s.slot_name(k)),
          &s.slot(k)));
    }
    DTF_ASSIGN_OR_RETURN(
        std::vector<int64_t> step,
        bundle.GetInt64s(StrCat(kSlotPrefix, vars[i].name, "/step")));
    if (step.size() == 1) s.set_step(step[0]);
  }
  DTF_ASSIGN_OR_RETURN(std::vector<int64_t> step,
                       bundle.GetInt64s("train/global_step"));
  DTF_ASSIGN_OR_RETURN(std::vector<int64_t> position,
                       bundle.GetInt64s("train/input_position"));
  if (step.size() != 1 || position.size() != 4) {
    return DataLossError(StrCat(bundle.path(), ": malformed training state"));
  }
  state->global_step = step[0];
  state->position =
      InputPosition{position[0], position[1], position[2], position[3]};
  return OkStatus();
}

StatusOr<kernels::Tensor> ReadCheckpointTensor(const Bundle& bundle,
                                               std::string_view variable,
                                               std::string_view slot,
                                               std::span<const int64_t> shape) {
  kernels::Tensor t = kernels::Tensor::Empty(shape);
  DTF_RETURN_IF_ERROR(
      RestoreTensor(bundle,
                    slot.empty() ? StrCat(kVarPrefix, variable)
                                 : StrCat(kSlotPrefix, variable, "/", slot),
                    &t));
  return t;
}

StatusOr<int64_t> ReadCheckpointStep(const Bundle& bundle,
                                     std::string_view variable) {
  const std::string name = variable.empty()
                               ? std::string("train/global_step")
                               : StrCat(kSlotPrefix, variable, "/step");
  StatusOr<std::vector<int64_t>> step = bundle.GetInt64s(name);
  if (!step.ok()) {
    return FailedPreconditionError(StrCat(
        Message(step.status()), "; the checkpoint does not match the job"));
  }
  if (step->size() != 1) {
    return DataLossError(StrCat(bundle.path(), ": malformed \"", name, "\""));
  }
  return (*step)[0];
}

Status ExportModel(const std::string& dir, std::string_view model_toml,
                   const FeatureLayer& layer, const Model& model) {
  Bundle bundle;
  AddNormalizer(layer, &bundle);
  for (const Variable& v : model.variables()) {
    bundle.AddTensor(StrCat(kVarPrefix, v.name), v.value);
  }
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
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<Model> model,
                       Model::Create(layer, *definition.model, 0));
  DTF_ASSIGN_OR_RETURN(
      Bundle bundle,
      Bundle::ReadFile((fs::path(dir) / kVariablesFile).string()));
  DTF_RETURN_IF_ERROR(RestoreNormalizer(bundle, &layer));
  DTF_RETURN_IF_ERROR(RestoreVariables(bundle, model.get()));
  return LoadedModel{std::move(definition), std::move(layer), std::move(model)};
}

}  // namespace dtf::runtime
