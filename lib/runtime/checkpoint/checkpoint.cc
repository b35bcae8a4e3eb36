#include "lib/runtime/checkpoint/checkpoint.h"

#include <algorithm>
#include <utility>

#include "lib/base/strings.h"

namespace dtf::runtime {
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

std::string CheckpointVariableKey(std::string_view variable) {
  return StrCat(kVarPrefix, variable);
}

std::string CheckpointSlotKey(std::string_view variable,
                              std::string_view slot) {
  return StrCat(kSlotPrefix, variable, "/", slot);
}

std::string CheckpointStepKey(std::string_view variable) {
  return StrCat(kSlotPrefix, variable, "/step");
}

Bundle MakeCheckpointState(const FeatureLayer& layer, const TrainState& state,
                           std::string_view model_toml,
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
  bundle.AddInt64s(std::string(kCheckpointInputEmittedEntry),
                   std::vector<int64_t>{p.emitted});
  if (!state.worker_positions.empty()) {
    // -1 four times for a worker whose position is not known.
    std::vector<int64_t> positions, emitted;
    for (const std::optional<InputPosition>& w : state.worker_positions) {
      const InputPosition q = w.value_or(InputPosition{-1, -1, -1, -1, -1});
      positions.insert(positions.end(),
                       {q.epoch, q.file, q.record, q.epoch_record});
      emitted.push_back(q.emitted);
    }
    bundle.AddInt64s(std::string(kCheckpointWorkerPositionsEntry), positions);
    bundle.AddInt64s(std::string(kCheckpointWorkerEmittedEntry), emitted);
  }
  AddNormalizer(layer, &bundle);
  return bundle;
}

Bundle MakeCheckpoint(const FeatureLayer& layer, const Model& model,
                      const std::vector<kernels::OptimizerState>& states,
                      const TrainState& state, std::string_view model_toml,
                      const CheckpointOrigin& origin) {
  Bundle bundle = MakeCheckpointState(layer, state, model_toml, origin);
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

StatusOr<std::vector<int64_t>> ReadCheckpointEmitted(const Bundle& bundle,
                                                     std::string_view entry,
                                                     size_t count) {
  if (bundle.Find(entry) == nullptr) return std::vector<int64_t>(count, -1);
  DTF_ASSIGN_OR_RETURN(std::vector<int64_t> emitted, bundle.GetInt64s(entry));
  if (emitted.size() != count ||
      std::any_of(emitted.begin(), emitted.end(),
                  [](int64_t n) { return n < -1; })) {
    return DataLossError(StrCat(bundle.path(), ": malformed \"", entry, "\""));
  }
  return emitted;
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
  DTF_ASSIGN_OR_RETURN(
      const std::vector<int64_t> emitted,
      ReadCheckpointEmitted(bundle, kCheckpointInputEmittedEntry, 1));
  state->position = InputPosition{position[0], position[1], position[2],
                                  position[3], emitted[0]};
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

Bundle MakeModelBundle(const FeatureLayer& layer, const Model& model) {
  Bundle bundle;
  AddNormalizer(layer, &bundle);
  for (const Variable& v : model.variables()) {
    bundle.AddTensor(StrCat(kVarPrefix, v.name), v.value);
  }
  return bundle;
}

Status RestoreNormalizerStats(const Bundle& bundle, FeatureLayer* layer) {
  return RestoreNormalizer(bundle, layer);
}

Status RestoreModelBundle(const Bundle& bundle, FeatureLayer* layer,
                          Model* model) {
  DTF_RETURN_IF_ERROR(RestoreNormalizer(bundle, layer));
  return RestoreVariables(bundle, model);
}

}  // namespace dtf::runtime
