#include "lib/runtime/train/trainer.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "lib/base/strings.h"
#include "lib/data/input_pipeline.h"
#include "lib/data/job_toml.h"
#include "lib/kernels/context.h"
#include "lib/runtime/checkpoint/checkpoint.h"
#include "lib/runtime/checkpoint/checkpoint_files.h"
#include "lib/runtime/model/device.h"
#include "lib/runtime/model/optimizers.h"
#include "lib/runtime/train/chief.h"
#include "lib/runtime/train/job_records.h"
#include "lib/runtime/train/train_hooks.h"
#include "lib/runtime/train/train_loop.h"
#include "lib/runtime/train/train_step.h"
#include "lib/runtime/train/update.h"

namespace dtf::runtime {

namespace fs = std::filesystem;

namespace {

// Where training starts: with `resume`, the checkpoint at `checkpoint_path`
// (when there is one) restored into `layer`, `model` and `states`; else the
// normalizer statistics fit over the training records, when the features
// need them.
StatusOr<TrainState> StartState(const JobFile& job, bool resume,
                                const std::string& checkpoint_path,
                                const kernels::Context& host_ctx,
                                const JobRecords& records,
                                const TrainHooks& hooks, FeatureLayer* layer,
                                Model* model,
                                std::vector<kernels::OptimizerState>* states) {
  TrainState state;
  if (resume && fs::exists(checkpoint_path)) {
    DTF_ASSIGN_OR_RETURN(Bundle bundle, Bundle::ReadFile(checkpoint_path));
    DTF_ASSIGN_OR_RETURN(const CheckpointInfo info, ReadCheckpointInfo(bundle));
    if (!info.job_fingerprint.empty() &&
        info.job_fingerprint != CheckpointFingerprint(job)) {
      return FailedPreconditionError(StrCat(
          checkpoint_path, ": written for job fingerprint ",
          info.job_fingerprint, ", but the job's fingerprint is ",
          CheckpointFingerprint(job),
          " (its schema, features, model or optimizers changed); refusing "
          "to resume from it (train with --restart to start afresh)"));
    }
    DTF_RETURN_IF_ERROR(
        RestoreCheckpoint(bundle, layer, model, states, &state));
    hooks.Note(StrCat("resuming from ", checkpoint_path, " at step ",
                      state.global_step));
  } else if (layer->needs_normalizer()) {
    DTF_ASSIGN_OR_RETURN(int64_t n,
                         FitNormalizer(host_ctx, records.train, layer));
    hooks.Note(
        StrCat("normalizer statistics fit over ", n, " training examples"));
  }
  return state;
}

}  // namespace

StatusOr<TrainResult> Train(const JobFile& job, const TrainOptions& options) {
  if (!job.model) {
    return FailedPreconditionError(
        StrCat(job.path,
               ": no [model] table; add one (docs/job-file.md) or "
               "scaffold a job with `dtf init`"));
  }
  const ModelSpec& spec = *job.model;
  const TrainSpec& train = job.train;
  TrainHooks hooks;
  hooks.on_progress = options.on_progress;
  hooks.on_eval = options.on_eval;
  hooks.on_note = options.on_note;
  hooks.cancel = options.cancel;
  auto note = [&](std::string_view text) { hooks.Note(text); };
  const int threads =
      options.threads > 0 ? options.threads : static_cast<int>(train.threads);
  DTF_ASSIGN_OR_RETURN(const kernels::Context ctx,
                       MakeComputeContext(train.device, threads));
  const kernels::Context& host_ctx = HostContext(ctx);
  const int64_t batch_size =
      options.batch_size > 0 ? options.batch_size : train.batch_size;
  int64_t max_steps = train.steps;
  int64_t epochs = train.epochs;
  if (options.steps > 0) {
    max_steps = options.steps;
    epochs = 0;
  } else if (options.epochs > 0) {
    max_steps = 0;
    epochs = options.epochs;
  }

  DTF_ASSIGN_OR_RETURN(JobRecords records, FindJobRecords(job));
  DTF_ASSIGN_OR_RETURN(FeatureLayer layer,
                       FeatureLayer::Create(job.schema, job.features, spec));
  const std::string model_toml = ModelDefinitionToToml(job);
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<Model> model,
                       Model::Create(layer, spec, uint64_t(train.seed)));
  DTF_ASSIGN_OR_RETURN(Optimizers optimizers, MakeOptimizers(train));
  std::vector<kernels::OptimizerState> states =
      NewOptimizerStates(optimizers, *model, VariableShapes(*model));

  std::error_code ec;
  fs::create_directories(train.output_dir, ec);
  if (ec) {
    return ErrnoToStatus(ec.value(),
                         StrCat("cannot create output_dir ", train.output_dir));
  }
  const std::string checkpoint_path =
      (fs::path(train.output_dir) / kCheckpointFile).string();
  DTF_ASSIGN_OR_RETURN(
      const TrainState state,
      StartState(job, options.resume, checkpoint_path, host_ctx, records, hooks,
                 &layer, model.get(), &states));
  // On a GPU the variables and optimizer slots live there from here on;
  // checkpoints and the export bring them back to the host for a moment.
  const std::unique_ptr<Update> update =
      MakeLocalUpdate(ctx, model.get(), std::move(optimizers),
                      std::move(states), state.global_step);

  ChiefOptions chief_options;
  chief_options.output_dir = train.output_dir;
  chief_options.model_toml = model_toml;
  chief_options.origin = {"", CheckpointFingerprint(job)};
  chief_options.keep_checkpoints = train.keep_checkpoints;
  chief_options.eval_files =
      records.eval.empty() ? records.train : records.eval;
  chief_options.eval_split =
      records.eval.empty()
          ? (records.train_split.empty() ? "train" : records.train_split)
          : records.eval_split;
  chief_options.eval_batch_size = std::max<int64_t>(batch_size, 1024);
  if (options.eval && records.eval.empty()) {
    note("the job has no evaluation split; evaluating on the training data");
  }
  chief_options.resumed = state.global_step > 0;
  Chief chief(train, std::move(chief_options), ctx, &layer, hooks);

  InputPipelineOptions input;
  input.files = records.train;
  input.features = layer.ParseSpecs(/*with_label=*/true);
  input.batch_size = batch_size;
  input.epochs = max_steps > 0 ? -1 : epochs;
  input.shuffle_buffer_size = train.shuffle_buffer;
  input.seed = uint64_t(train.seed);
  input.cache = TrainInputCache(train, HostContext(ctx).num_threads());
  input.start = state.position;
  DTF_ASSIGN_OR_RETURN(auto pipeline, InputPipeline::Create(input));

  TrainLoopOptions loop;
  loop.loss = spec.loss;
  loop.max_steps = max_steps;
  loop.first_step = state.global_step;
  loop.start = state.position;
  loop.log_every_steps = train.log_every_steps;
  loop.eval_every_steps = train.eval_every_steps;
  loop.checkpoint_every_steps = train.checkpoint_every_steps;
  loop.evaluate = options.eval;
  loop.record_position = true;
  loop.loss_of_last_epoch = true;
  TrainLoopParts parts;
  parts.ctx = &ctx;
  parts.layer = &layer;
  parts.model = model.get();
  parts.input = pipeline.get();
  parts.update = update.get();
  parts.chief = &chief;
  StatusOr<TrainResult> result = RunTrainLoop(loop, hooks, parts);
  if (std::string c = InputCacheNote(pipeline->cache_stats()); !c.empty()) {
    note(c);
  }
  return result;
}

}  // namespace dtf::runtime
