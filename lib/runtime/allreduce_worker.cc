#include "lib/runtime/allreduce_worker.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "lib/base/strings.h"
#include "lib/data/input_pipeline.h"
#include "lib/data/job_toml.h"
#include "lib/kernels/collective.h"
#include "lib/kernels/context.h"
#include "lib/kernels/fuse.h"
#include "lib/runtime/checkpoint.h"
#include "lib/runtime/coordinator_service.h"
#include "lib/runtime/device.h"
#include "lib/runtime/eval_tracker.h"
#include "lib/runtime/event_writer.h"
#include "lib/runtime/job_records.h"
#include "lib/runtime/model.h"
#include "lib/runtime/optimizers.h"
#include "lib/runtime/train_step.h"
#include "lib/runtime/worker_progress.h"

namespace dtf::runtime {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The most one gradient bucket holds (PyTorch DDP's default): large enough
// that NCCL runs at full bandwidth, small enough to bound the extra memory.
constexpr int64_t kBucketBytes = int64_t{25} << 20;

// What the ranks agree on before each step, the smallest value winning:
// every rank has a batch, one ran out of data (or the chief's early
// stopping ended training), or one was cancelled.
constexpr float kCancelled = 0.0f;
constexpr float kOutOfData = 1.0f;
constexpr float kHaveBatch = 2.0f;

// Gradients averaged in one collective: variable vars[k] at offsets[k].
struct Bucket {
  std::vector<size_t> vars;
  std::vector<int64_t> offsets;
  int64_t size = 0;
};

// The trainable variables in reverse order (the order in which backprop
// finishes them) in buckets of at most kBucketBytes; a larger variable gets
// a bucket to itself.
std::vector<Bucket> PlanBuckets(const std::vector<Variable>& vars) {
  const int64_t limit = kBucketBytes / int64_t(sizeof(float));
  std::vector<Bucket> buckets;
  for (size_t v = vars.size(); v-- > 0;) {
    if (!vars[v].trainable) continue;
    const int64_t n = vars[v].value.size();
    if (buckets.empty() ||
        (buckets.back().size > 0 && buckets.back().size + n > limit)) {
      buckets.emplace_back();
    }
    Bucket& b = buckets.back();
    b.vars.push_back(v);
    b.offsets.push_back(b.size);
    b.size += n;
  }
  return buckets;
}

// Writes variable v's gradient, dense or densified, to its place in bucket.
Status PackGradient(const kernels::Context& ctx, const Variable& v,
                    const Gradient& g, int64_t offset,
                    kernels::Tensor* bucket) {
  if (!v.sparse) return kernels::PackDense(ctx, g.dense, bucket, offset);
  const kernels::Tensor& rows = g.sparse.rows;
  if (v.value.rank() != 2 || rows.rank() != 2 ||
      rows.cols() != v.value.cols()) {
    return InternalError(StrCat("the gradient of ", v.name, " has rows ",
                                kernels::ShapeString(rows.shape()),
                                "; the variable is ",
                                kernels::ShapeString(v.value.shape())));
  }
  return kernels::PackSparse(ctx, g.sparse, v.value.rows(), bucket, offset);
}

// This rank's communicator: the chief makes the unique id and publishes it
// through its Coordinator; every other worker fetches it from there.
StatusOr<std::unique_ptr<kernels::Communicator>> JoinRun(
    const kernels::Context& ctx, const JobFile& job,
    const WorkerOptions& options, int num_workers) {
  const std::string self = StrCat("worker:", options.index);
  std::string id;
  if (options.index == 0) {
    DTF_ASSIGN_OR_RETURN(id, kernels::Communicator::NewId());
    if (options.coordinator != nullptr) {
      options.coordinator->SetCommId(id);
    } else if (num_workers > 1) {
      return FailedPreconditionError(
          "the chief of an allreduce run of several workers needs its "
          "Coordinator service to hand out the NCCL unique id");
    }
  } else {
    DTF_ASSIGN_OR_RETURN(
        id, FetchCommId(options.workers[0], options.credentials, self,
                        std::chrono::seconds(job.train.coordinator_timeout),
                        options.cancel));
  }
  return kernels::Communicator::Join(ctx, id, options.index, num_workers);
}

}  // namespace

StatusOr<TrainResult> RunAllreduceWorker(const JobFile& job,
                                         const WorkerOptions& options) {
  if (!job.model) {
    return FailedPreconditionError(StrCat(job.path, ": no [model] table"));
  }
  const ModelSpec& spec = *job.model;
  const TrainSpec& train = job.train;
  if (!train.device.cuda) {
    return FailedPreconditionError(StrCat(
        job.path,
        ": mode = \"allreduce\" averages gradients between GPUs "
        "over NCCL, but device is \"",
        DeviceNameString(train.device),
        "\"; set device = \"cuda\" in [train] (or use mode = \"sync\" with "
        "parameter servers)"));
  }
  const bool chief = options.index == 0;
  const int num_workers = std::max(1, int(options.workers.size()));
  const std::string self = StrCat("worker:", options.index);
  auto note = [&](std::string_view text) {
    if (options.on_note) options.on_note(text);
  };
  DTF_ASSIGN_OR_RETURN(const kernels::Context ctx,
                       MakeComputeContext(train.device, options.threads));
  const kernels::Context& host_ctx = HostContext(ctx);
  DTF_ASSIGN_OR_RETURN(JobRecords records, FindJobRecords(job));
  DTF_ASSIGN_OR_RETURN(FeatureLayer layer,
                       FeatureLayer::Create(job.schema, job.features, spec));
  if (layer.needs_normalizer()) {
    DTF_RETURN_IF_ERROR(
        FitNormalizer(host_ctx, records.train, &layer).status());
  }
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<Model> model,
                       Model::Create(layer, spec, uint64_t(train.seed)));
  DTF_ASSIGN_OR_RETURN(const Optimizers optimizers, MakeOptimizers(train));
  auto optimizer_of = [&](const Variable& v) -> const kernels::Optimizer& {
    return optimizers.For(v.part);
  };
  std::vector<Variable>& vars = model->variables();
  std::vector<kernels::OptimizerState> states(vars.size());
  for (size_t v = 0; v < vars.size(); ++v) {
    if (vars[v].trainable) {
      states[v] = optimizer_of(vars[v]).CreateState(vars[v].value.shape());
    }
  }
  // Variables and optimizer slots live on the GPU from here on; checkpoints
  // and the export bring them back to the host for a moment.
  MoveModel(ctx.memory(), model.get(), &states);
  auto on_host = [&](const std::function<Status()>& write) {
    return WithModelOnHost(ctx, model.get(), &states, write);
  };

  DTF_ASSIGN_OR_RETURN(std::unique_ptr<kernels::Communicator> comm,
                       JoinRun(ctx, job, options, num_workers));
  note(StrCat(self, ": joined the NCCL communicator as rank ", comm->rank(),
              " of ", comm->size()));
  for (Variable& v : vars) DTF_RETURN_IF_ERROR(comm->Broadcast(&v.value, 0));

  InputPipelineOptions input;
  input.files = records.train;
  input.features = layer.ParseSpecs(/*with_label=*/true);
  input.batch_size = train.batch_size;
  input.epochs = train.steps > 0 ? -1 : train.epochs;
  input.shuffle_buffer_size = train.shuffle_buffer;
  input.seed = uint64_t(train.seed);
  input.reader_index = options.index;
  input.reader_count = num_workers;
  DTF_ASSIGN_OR_RETURN(auto pipeline, InputPipeline::Create(input));

  // The chief's TensorBoard events, as a PS-mode chief writes them.
  std::unique_ptr<EventWriter> events;
  if (chief) {
    DTF_ASSIGN_OR_RETURN(events, EventWriter::Create(train.output_dir));
  }
  TrainResult result;
  result.num_parameters = model->num_parameters();
  int64_t step = 0;
  int64_t last_epoch = 0;
  WorkerProgress progress(options, self, events.get());

  // The chief's checkpoint: the global step, not the input position (each
  // worker's own, as in a PS run).
  const std::string checkpoint_path =
      (fs::path(train.output_dir) / kCheckpointFile).string();
  const std::string best_path =
      (fs::path(train.output_dir) / kBestCheckpointFile).string();
  const std::string model_toml = ModelDefinitionToToml(job);
  auto write_checkpoint_to = [&](const std::string& path) -> Status {
    std::error_code ec;
    fs::create_directories(train.output_dir, ec);
    TrainState state;
    state.global_step = step;
    return on_host([&] {
      return MakeCheckpoint(layer, *model, states, state, model_toml)
          .WriteFile(path);
    });
  };
  auto write_checkpoint = [&]() {
    return write_checkpoint_to(checkpoint_path);
  };

  // The chief evaluates the replica it holds (every rank's is the same),
  // keeps the best one, and says whether early stopping ends training. An
  // evaluation cancelled midway is no evaluation: the ranks then agree to
  // stop before the next step.
  const std::vector<std::string>& eval_files =
      records.eval.empty() ? records.train : records.eval;
  EvalTracker tracker(train);
  auto evaluate = [&]() -> StatusOr<bool> {
    StatusOr<EvalMetrics> metrics =
        Evaluate(ctx, layer, *model, eval_files,
                 std::max<int64_t>(train.batch_size, 1024), options.cancel);
    if (metrics.status().code() == absl::StatusCode::kCancelled) return false;
    DTF_RETURN_IF_ERROR(metrics.status());
    DTF_ASSIGN_OR_RETURN(
        result.eval, progress.Evaluated(
                         *std::move(metrics), step,
                         records.eval.empty() ? "train" : records.eval_split));
    const EvalVerdict verdict = tracker.Observe(*result.eval);
    if (!verdict.warning.empty()) note(verdict.warning);
    if (verdict.improved) DTF_RETURN_IF_ERROR(write_checkpoint_to(best_path));
    return verdict.stop;
  };

  // The step's gradients averaged over every rank and applied: the same
  // update on every replica. Moving statistics (untrainable), which each
  // rank's forward pass moved by its own batch, are averaged too.
  const std::vector<Bucket> buckets = PlanBuckets(vars);
  int64_t bucket_capacity = 0;
  for (const Bucket& b : buckets) {
    bucket_capacity = std::max(bucket_capacity, b.size);
  }
  kernels::Tensor bucket =
      kernels::Tensor::Empty({bucket_capacity}, kernels::Memory::kDevice);
  std::vector<kernels::Tensor> averaged(vars.size());
  std::vector<Gradient> grads;
  auto apply_averaged = [&]() -> Status {
    for (const Bucket& b : buckets) {
      bucket.Resize({b.size});
      for (size_t k = 0; k < b.vars.size(); ++k) {
        const size_t v = b.vars[k];
        DTF_RETURN_IF_ERROR(
            PackGradient(ctx, vars[v], grads[v], b.offsets[k], &bucket));
      }
      DTF_RETURN_IF_ERROR(comm->AllReduceMean(&bucket));
      for (size_t k = 0; k < b.vars.size(); ++k) {
        const size_t v = b.vars[k];
        DTF_RETURN_IF_ERROR(kernels::Unpack(
            ctx, bucket, b.offsets[k], vars[v].value.shape(), &averaged[v]));
        DTF_RETURN_IF_ERROR(optimizer_of(vars[v]).ApplyDense(
            ctx, &vars[v].value, averaged[v], &states[v]));
      }
    }
    for (Variable& v : vars) {
      if (!v.trainable) DTF_RETURN_IF_ERROR(comm->AllReduceMean(&v.value));
    }
    return OkStatus();
  };

  Batch batch;
  ModelInputs host_inputs, device_inputs;
  PinInputs(ctx, &host_inputs);
  kernels::Tensor logits, dlogits;
  bool cancelled = false;
  // The chief's early stopping ended training: it says so in the next
  // agreement, and every rank stops at the same step.
  bool stop_early = false;
  while (train.steps == 0 || step < train.steps) {
    const auto t0 = Clock::now();
    DTF_ASSIGN_OR_RETURN(bool more, pipeline->Next(&batch));
    float agreed = options.cancel != nullptr && options.cancel->load()
                       ? kCancelled
                       : (more && !stop_early ? kHaveBatch : kOutOfData);
    DTF_RETURN_IF_ERROR(comm->AllReduceMin(&agreed));
    if (agreed != kHaveBatch) {
      cancelled = agreed == kCancelled;
      break;
    }
    DTF_RETURN_IF_ERROR(layer.Transform(host_ctx, batch, true, &host_inputs));
    DTF_ASSIGN_OR_RETURN(const ModelInputs* staged,
                         StageInputs(ctx, host_inputs, &device_inputs));
    const ModelInputs& inputs = *staged;
    DTF_RETURN_IF_ERROR(model->Forward(ctx, inputs, true, &logits));
    DTF_ASSIGN_OR_RETURN(float loss,
                         ComputeLoss(ctx, spec.loss, logits, inputs, &dlogits));
    DTF_RETURN_IF_ERROR(model->Backward(ctx, inputs, dlogits, &grads));
    DTF_RETURN_IF_ERROR(apply_averaged());

    progress.AddStep(batch.rows, loss, Clock::now() - t0);
    ++step;
    const int64_t epoch = pipeline->position().epoch;
    if (train.log_every_steps > 0 && step % train.log_every_steps == 0) {
      progress.Report(step, last_epoch);
    }
    const bool epoch_done = epoch != last_epoch;
    if (epoch_done) {
      last_epoch = epoch;
      progress.EndEpoch();
      if (train.log_every_steps == 0) progress.Report(step, last_epoch);
    }
    if (!chief) continue;
    if (train.eval_every_steps > 0 ? step % train.eval_every_steps == 0
                                   : epoch_done) {
      DTF_ASSIGN_OR_RETURN(stop_early, evaluate());
      if (stop_early) note(tracker.StopNote(step));
    }
    if (train.checkpoint_every_steps > 0 &&
        step % train.checkpoint_every_steps == 0) {
      DTF_RETURN_IF_ERROR(write_checkpoint());
    }
  }
  if (cancelled) {
    if (!chief) return CancelledError(StrCat(self, ": stopped at step ", step));
    DTF_RETURN_IF_ERROR(write_checkpoint());
    return CancelledError(StrCat(self, ": stopped at step ", step,
                                 "; checkpoint ", checkpoint_path));
  }
  progress.Report(step, last_epoch);
  result.steps = step;
  result.loss = progress.loss();
  result.examples = progress.examples();
  result.train_seconds = progress.train_seconds();
  result.examples_per_sec = progress.examples_per_sec();
  if (!chief) return result;

  // Every rank stopped at this step: the chief evaluates, writes the
  // checkpoint and the export, and ends the run.
  if (options.coordinator) {
    options.coordinator->Update(self, "done", step, result.loss,
                                result.examples_per_sec);
    options.coordinator->SetRunState("evaluating", step);
  }
  if (!result.eval || result.eval->step != step) {
    DTF_RETURN_IF_ERROR(evaluate().status());
    if (options.cancel != nullptr && options.cancel->load()) {
      DTF_RETURN_IF_ERROR(write_checkpoint());
      return CancelledError(StrCat(self, ": stopped at step ", step,
                                   "; checkpoint ", checkpoint_path));
    }
  }
  DTF_RETURN_IF_ERROR(write_checkpoint());
  result.checkpoint = checkpoint_path;
  RecordBest(tracker, best_path, &result);
  result.export_dir = (fs::path(train.output_dir) / kExportDir).string();
  DTF_RETURN_IF_ERROR(on_host([&] {
    return ExportBest(tracker, best_path, result.export_dir, model_toml, &layer,
                      model.get());
  }));
  DTF_RETURN_IF_ERROR(events->Close());
  if (options.coordinator) {
    options.coordinator->SetRunState("finished", step);
    options.coordinator->EndRun();
  }
  return result;
}

}  // namespace dtf::runtime
