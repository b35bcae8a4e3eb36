#include "lib/runtime/trainer.h"

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "lib/base/strings.h"
#include "lib/data/input_pipeline.h"
#include "lib/data/job_toml.h"
#include "lib/kernels/context.h"
#include "lib/kernels/loss.h"
#include "lib/runtime/checkpoint.h"
#include "lib/runtime/device.h"
#include "lib/runtime/eval_tracker.h"
#include "lib/runtime/job_records.h"
#include "lib/runtime/optimizers.h"
#include "lib/runtime/train_step.h"

namespace dtf::runtime {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

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
  auto note = [&](std::string_view text) {
    if (options.on_note) options.on_note(text);
  };
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
  std::vector<kernels::OptimizerState> states(model->variables().size());
  for (size_t i = 0; i < states.size(); ++i) {
    const Variable& v = model->variables()[i];
    if (v.trainable) {
      states[i] = optimizers.For(v.part).CreateState(v.value.shape());
    }
  }

  std::error_code ec;
  fs::create_directories(train.output_dir, ec);
  if (ec) {
    return ErrnoToStatus(ec.value(),
                         StrCat("cannot create output_dir ", train.output_dir));
  }
  const std::string checkpoint_path =
      (fs::path(train.output_dir) / kCheckpointFile).string();
  TrainState state;
  if (options.resume && fs::exists(checkpoint_path)) {
    DTF_ASSIGN_OR_RETURN(Bundle bundle, Bundle::ReadFile(checkpoint_path));
    DTF_RETURN_IF_ERROR(
        RestoreCheckpoint(bundle, &layer, model.get(), &states, &state));
    note(StrCat("resuming from ", checkpoint_path, " at step ",
                state.global_step));
  } else if (layer.needs_normalizer()) {
    DTF_ASSIGN_OR_RETURN(int64_t n,
                         FitNormalizer(host_ctx, records.train, &layer));
    note(StrCat("normalizer statistics fit over ", n, " training examples"));
  }
  // On a GPU the variables and optimizer slots live there from here on;
  // checkpoints and the export bring them back to the host for a moment.
  MoveModel(ctx.memory(), model.get(), &states);
  auto on_host = [&](const std::function<Status()>& write) {
    return WithModelOnHost(ctx, model.get(), &states, write);
  };
  auto write_checkpoint_to = [&](const std::string& path) {
    return on_host([&] {
      return MakeCheckpoint(layer, *model, states, state, model_toml)
          .WriteFile(path);
    });
  };
  auto write_checkpoint = [&]() {
    return write_checkpoint_to(checkpoint_path);
  };
  // Cancelled: the checkpoint written first, so that a later run resumes.
  auto cancelled = [&]() -> Status {
    DTF_RETURN_IF_ERROR(write_checkpoint());
    return CancelledError(StrCat("training cancelled at step ",
                                 state.global_step, "; checkpoint ",
                                 checkpoint_path));
  };
  const std::string best_path =
      (fs::path(train.output_dir) / kBestCheckpointFile).string();
  EvalTracker tracker(train);

  const std::vector<std::string>& eval_files =
      records.eval.empty() ? records.train : records.eval;
  const std::string eval_split =
      records.eval.empty()
          ? (records.train_split.empty() ? "train" : records.train_split)
          : records.eval_split;
  if (options.eval && records.eval.empty()) {
    note("the job has no evaluation split; evaluating on the training data");
  }
  TrainResult result;
  result.num_parameters = model->num_parameters();
  // Evaluates, keeps the best model, and says whether early stopping ends
  // training.
  auto evaluate = [&]() -> StatusOr<bool> {
    StatusOr<EvalMetrics> metrics =
        Evaluate(ctx, layer, *model, eval_files,
                 std::max<int64_t>(batch_size, 1024), options.cancel);
    if (metrics.status().code() == absl::StatusCode::kCancelled) {
      return cancelled();
    }
    DTF_RETURN_IF_ERROR(metrics.status());
    EvalReport report{state.global_step, *std::move(metrics), eval_split};
    if (options.on_eval) options.on_eval(report);
    const EvalVerdict verdict = tracker.Observe(report);
    if (!verdict.warning.empty()) note(verdict.warning);
    if (verdict.improved) DTF_RETURN_IF_ERROR(write_checkpoint_to(best_path));
    result.eval = std::move(report);
    return verdict.stop;
  };

  InputPipelineOptions input;
  input.files = records.train;
  input.features = layer.ParseSpecs(/*with_label=*/true);
  input.batch_size = batch_size;
  input.epochs = max_steps > 0 ? -1 : epochs;
  input.shuffle_buffer_size = train.shuffle_buffer;
  input.seed = uint64_t(train.seed);
  input.start = state.position;
  DTF_ASSIGN_OR_RETURN(auto pipeline, InputPipeline::Create(input));

  Batch batch;
  ModelInputs host_inputs, device_inputs;
  PinInputs(ctx, &host_inputs);
  kernels::Tensor logits;
  kernels::Tensor dlogits;
  std::vector<Gradient> grads;
  const auto start = Clock::now();
  Clock::duration in_steps{};
  Clock::duration window_time{};
  double window_loss = 0, epoch_loss = 0;
  int64_t window_rows = 0, window_steps = 0, epoch_rows = 0;
  int64_t last_epoch = state.position.epoch;
  int64_t last_eval_step = -1;
  double last_loss = 0;
  auto report = [&]() {
    if (window_steps == 0) return;
    TrainProgress p;
    p.step = state.global_step;
    p.epoch = state.position.epoch;
    p.examples = result.examples;
    p.loss = window_loss / double(window_rows);
    p.examples_per_sec = double(window_rows) / Seconds(window_time);
    p.elapsed_seconds = Seconds(Clock::now() - start);
    last_loss = p.loss;
    if (options.on_progress) options.on_progress(p);
    window_loss = 0;
    window_rows = window_steps = 0;
    window_time = {};
  };

  while (max_steps == 0 || state.global_step < max_steps) {
    if (options.cancel != nullptr && options.cancel->load()) {
      return cancelled();
    }
    const auto t0 = Clock::now();
    DTF_ASSIGN_OR_RETURN(bool more, pipeline->Next(&batch));
    if (!more) break;
    DTF_RETURN_IF_ERROR(layer.Transform(host_ctx, batch, true, &host_inputs));
    DTF_ASSIGN_OR_RETURN(const ModelInputs* staged,
                         StageInputs(ctx, host_inputs, &device_inputs));
    const ModelInputs& inputs = *staged;
    DTF_RETURN_IF_ERROR(model->Forward(ctx, inputs, true, &logits));
    DTF_ASSIGN_OR_RETURN(float loss,
                         ComputeLoss(ctx, spec.loss, logits, inputs, &dlogits));
    DTF_RETURN_IF_ERROR(model->Backward(ctx, inputs, dlogits, &grads));
    auto& vars = model->variables();
    for (size_t i = 0; i < vars.size(); ++i) {
      if (!vars[i].trainable) continue;
      const kernels::Optimizer& opt = optimizers.For(vars[i].part);
      if (vars[i].sparse) {
        DTF_RETURN_IF_ERROR(
            opt.ApplySparse(ctx, &vars[i].value, grads[i].sparse, &states[i]));
      } else {
        DTF_RETURN_IF_ERROR(
            opt.ApplyDense(ctx, &vars[i].value, grads[i].dense, &states[i]));
      }
    }
    const auto step_time = Clock::now() - t0;
    in_steps += step_time;
    window_time += step_time;
    ++state.global_step;
    state.position = pipeline->position();
    result.examples += batch.rows;
    window_loss += double(loss) * double(batch.rows);
    epoch_loss += double(loss) * double(batch.rows);
    window_rows += batch.rows;
    epoch_rows += batch.rows;
    ++window_steps;

    const bool epoch_done = state.position.epoch != last_epoch;
    if (train.log_every_steps > 0 &&
        state.global_step % train.log_every_steps == 0) {
      report();
    }
    if (epoch_done) {
      last_epoch = state.position.epoch;
      result.loss = epoch_loss / double(epoch_rows);
      epoch_loss = 0;
      epoch_rows = 0;
      if (train.log_every_steps == 0) report();
    }
    const bool eval_now =
        options.eval && (train.eval_every_steps > 0
                             ? state.global_step % train.eval_every_steps == 0
                             : epoch_done);
    bool stop = false;
    if (eval_now) {
      DTF_ASSIGN_OR_RETURN(stop, evaluate());
      last_eval_step = state.global_step;
    }
    if (train.checkpoint_every_steps > 0 &&
        state.global_step % train.checkpoint_every_steps == 0) {
      DTF_RETURN_IF_ERROR(write_checkpoint());
    }
    if (stop) {
      note(tracker.StopNote(state.global_step));
      break;
    }
  }
  report();
  if (epoch_rows > 0 && result.loss == 0) {
    result.loss = epoch_loss / double(epoch_rows);
  }
  if (result.loss == 0) result.loss = last_loss;
  result.steps = state.global_step;
  result.train_seconds = Seconds(in_steps);
  result.examples_per_sec = result.train_seconds > 0
                                ? double(result.examples) / result.train_seconds
                                : 0;
  if (options.eval && last_eval_step != state.global_step) {
    DTF_RETURN_IF_ERROR(evaluate().status());
  }
  DTF_RETURN_IF_ERROR(write_checkpoint());
  result.checkpoint = checkpoint_path;
  RecordBest(tracker, best_path, &result);
  result.export_dir = (fs::path(train.output_dir) / kExportDir).string();
  DTF_RETURN_IF_ERROR(on_host([&] {
    return ExportBest(tracker, best_path, result.export_dir, model_toml, &layer,
                      model.get());
  }));
  return result;
}

}  // namespace dtf::runtime
