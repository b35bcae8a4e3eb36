#include "lib/runtime/worker.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "lib/base/strings.h"
#include "lib/data/input_pipeline.h"
#include "lib/data/job_toml.h"
#include "lib/kernels/context.h"
#include "lib/runtime/checkpoint.h"
#include "lib/runtime/coordinator_service.h"
#include "lib/runtime/device.h"
#include "lib/runtime/eval_tracker.h"
#include "lib/runtime/event_writer.h"
#include "lib/runtime/job_records.h"
#include "lib/runtime/model.h"
#include "lib/runtime/optimizers.h"
#include "lib/runtime/ps_client.h"
#include "lib/runtime/tensor_pieces.h"
#include "lib/runtime/train_step.h"
#include "lib/runtime/worker_progress.h"

namespace dtf::runtime {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The rows of each sparse input a batch touches: sorted unique global ids;
// the batch's ids are rewritten to positions in that list.
void Compact(ModelInputs* inputs, std::vector<std::vector<int64_t>>* unique) {
  unique->resize(inputs->ids.size());
  for (size_t i = 0; i < inputs->ids.size(); ++i) {
    kernels::IdTensor& ids = inputs->ids[i].ids;
    std::vector<int64_t>& u = (*unique)[i];
    u.assign(ids.data(), ids.data() + ids.size());
    std::sort(u.begin(), u.end());
    u.erase(std::unique(u.begin(), u.end()), u.end());
    for (int64_t k = 0; k < ids.size(); ++k) {
      ids[k] = std::lower_bound(u.begin(), u.end(), ids[k]) - u.begin();
    }
  }
}

// The model's variables as pull requests: dense ones whole, sparse ones the
// rows of `unique` (or all rows).
// With `states` (parallel to the variables), their optimizer slots too.
void PullRequests(Model& model, const std::vector<std::vector<int64_t>>* unique,
                  std::vector<PsClient::DenseVar>* dense,
                  std::vector<PsClient::SparseVar>* sparse,
                  const std::vector<std::vector<int64_t>>& full_shapes,
                  std::vector<kernels::OptimizerState>* states = nullptr) {
  dense->clear();
  sparse->clear();
  auto& vars = model.variables();
  for (size_t v = 0; v < vars.size(); ++v) {
    kernels::OptimizerState* state =
        states != nullptr && vars[v].trainable ? &(*states)[v] : nullptr;
    if (!vars[v].sparse) {
      dense->push_back({vars[v].name, &vars[v].value, state});
      continue;
    }
    PsClient::SparseVar s;
    s.name = vars[v].name;
    s.rows = full_shapes[v][0];
    s.cols = PieceCols(full_shapes[v]);
    s.out = &vars[v].value;
    s.state = state;
    if (unique == nullptr) {
      s.all = true;
    } else {
      s.ids = &(*unique)[size_t(model.SparseInputOf(v))];
    }
    sparse->push_back(s);
  }
}

// A batch made ready for a step: read, transformed and compacted.
struct Prepared {
  Status status;
  bool more = false;
  int64_t epoch = 0;  // the input's epoch after this batch was read
  Batch batch;
  ModelInputs inputs;
  std::vector<std::vector<int64_t>> unique;
};

// Prepares the next batch on its own thread while a step runs.
// Not thread-safe: Start and Wait alternate, from one thread.
class Prefetcher {
 public:
  explicit Prefetcher(std::function<void(Prepared*)> prepare)
      : prepare_(std::move(prepare)), thread_([this] { Loop(); }) {}
  ~Prefetcher() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Start(Prepared* out) {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = out;
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return job_ == nullptr; });
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return stop_ || job_ != nullptr; });
      if (stop_) return;
      lock.unlock();
      prepare_(job_);
      lock.lock();
      job_ = nullptr;
      cv_.notify_all();
    }
  }

  std::function<void(Prepared*)> prepare_;
  std::mutex mu_;
  std::condition_variable cv_;
  Prepared* job_ = nullptr;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace

StatusOr<TrainResult> RunWorker(const JobFile& job,
                                const WorkerOptions& options) {
  if (!job.model) {
    return FailedPreconditionError(StrCat(job.path, ": no [model] table"));
  }
  const ModelSpec& spec = *job.model;
  const TrainSpec& train = job.train;
  const bool chief = options.index == 0;
  const std::string self = StrCat("worker:", options.index);
  auto note = [&](std::string_view text) {
    if (options.on_note) options.on_note(text);
  };
  DTF_ASSIGN_OR_RETURN(
      const kernels::Context ctx,
      MakeComputeContext(train.device, options.threads > 0
                                           ? options.threads
                                           : int(train.threads)));
  DeviceMirror mirror;
  DTF_ASSIGN_OR_RETURN(JobRecords records, FindJobRecords(job));
  DTF_ASSIGN_OR_RETURN(FeatureLayer layer,
                       FeatureLayer::Create(job.schema, job.features, spec));
  if (layer.needs_normalizer()) {
    DTF_RETURN_IF_ERROR(
        FitNormalizer(HostContext(ctx), records.train, &layer).status());
  }
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<Model> model,
                       Model::Create(layer, spec, uint64_t(train.seed)));
  // The optimizers, for the shapes of their slots in checkpoints.
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<kernels::Optimizer> wide_optimizer,
                       MakeOptimizer(train.optimizer ? *train.optimizer
                                                     : *train.wide_optimizer));
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<kernels::Optimizer> deep_optimizer,
                       MakeOptimizer(train.optimizer ? *train.optimizer
                                                     : *train.deep_optimizer));
  std::vector<std::vector<int64_t>> full_shapes;
  for (const Variable& v : model->variables()) {
    full_shapes.push_back(v.value.shape());
  }
  const std::chrono::milliseconds timeout =
      std::chrono::seconds(train.heartbeat_timeout + 30);
  PsClient ps(options.ps, options.credentials, options.index, timeout);
  const int num_workers = int(options.workers.size());

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

  const bool sync = train.mode == TrainMode::kSync;
  // The chief's TensorBoard events: training loss and throughput at each
  // report, evaluation metrics at each evaluation.
  std::unique_ptr<EventWriter> events;
  if (chief) {
    DTF_ASSIGN_OR_RETURN(events, EventWriter::Create(train.output_dir));
  }
  TrainResult result;
  result.num_parameters = model->num_parameters();
  kernels::Tensor logits, dlogits;
  std::vector<Gradient> grads, host_grads;
  ModelInputs device_inputs;
  std::vector<PsClient::DenseVar> dense;
  std::vector<PsClient::SparseVar> sparse;
  std::vector<kernels::Tensor> before;  // untrainable values as pulled
  int64_t local_steps = 0, global_step = 0;
  int64_t last_epoch = 0;
  WorkerProgress progress(options, self, events.get());

  // After a failed call: pulls (the rows of the next batch, when `pull`)
  // until every PS answers, for at most coordinator_timeout.
  auto rejoin = [&](const Status& why, bool pull) -> Status {
    note(StrCat(Message(why), "; waiting up to ", train.coordinator_timeout,
                " s for it"));
    const auto deadline =
        Clock::now() + std::chrono::seconds(train.coordinator_timeout);
    while (true) {
      if (options.cancel != nullptr && options.cancel->load()) {
        return CancelledError(StrCat(self, ": stopped at step ", global_step));
      }
      Status st = pull ? ps.Pull(dense, sparse, 0) : ps.Pull({}, {}, 0);
      if (st.ok()) break;
      const bool transient = st.code() == absl::StatusCode::kUnavailable ||
                             st.code() == absl::StatusCode::kDeadlineExceeded;
      if (!transient || Clock::now() >= deadline) return st;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    global_step = *std::max_element(ps.steps().begin(), ps.steps().end());
    note(StrCat("every parameter server answers again; global step ",
                global_step));
    return OkStatus();
  };

  // Pulls what dense and sparse ask for (with optimizer slots when
  // `slots`); a PS that went away is waited for (rejoin) and asked again.
  auto pull_waiting = [&](bool slots) -> Status {
    Status st = ps.Pull(dense, sparse, 0, slots);
    if (st.code() != absl::StatusCode::kUnavailable) return st;
    DTF_RETURN_IF_ERROR(rejoin(st, /*pull=*/false));
    return ps.Pull(dense, sparse, 0, slots);
  };

  // The chief's checkpoint: every variable and optimizer slot, pulled from
  // the parameter servers. It records the global step; the input position
  // is each worker's own and is not kept.
  const std::string checkpoint_path =
      (fs::path(train.output_dir) / kCheckpointFile).string();
  const std::string best_path =
      (fs::path(train.output_dir) / kBestCheckpointFile).string();
  const std::string model_toml = ModelDefinitionToToml(job);
  auto write_checkpoint_to = [&](const std::string& path) -> Status {
    auto& vars = model->variables();
    std::vector<kernels::OptimizerState> states(vars.size());
    for (size_t v = 0; v < vars.size(); ++v) {
      if (!vars[v].trainable) continue;
      const kernels::Optimizer& opt =
          vars[v].part == Part::kWide ? *wide_optimizer : *deep_optimizer;
      states[v] = opt.CreateState(full_shapes[v]);
    }
    PullRequests(*model, nullptr, &dense, &sparse, full_shapes, &states);
    DTF_RETURN_IF_ERROR(pull_waiting(/*slots=*/true));
    std::error_code ec;
    fs::create_directories(train.output_dir, ec);
    TrainState state;
    state.global_step = global_step;
    return MakeCheckpoint(layer, *model, states, state, model_toml)
        .WriteFile(path);
  };
  auto write_checkpoint = [&]() {
    return write_checkpoint_to(checkpoint_path);
  };
  // Cancelled (Ctrl-C, SIGTERM): the chief writes its checkpoint first, as
  // `dtf train` does, so that the run can resume.
  auto cancelled = [&]() -> Status {
    if (!chief) {
      return CancelledError(StrCat(self, ": stopped at step ", global_step));
    }
    if (Status st = write_checkpoint(); !st.ok()) {
      return CancelledError(StrCat(self, ": stopped at step ", global_step,
                                   "; no checkpoint: ", Message(st)));
    }
    return CancelledError(StrCat(self, ": stopped at step ", global_step,
                                 "; checkpoint ", checkpoint_path));
  };
  auto is_cancelled = [&] {
    return options.cancel != nullptr && options.cancel->load();
  };

  // The chief evaluates with every row of every variable pulled, keeps the
  // best model, and says whether early stopping ends training.
  EvalTracker tracker(train);
  auto evaluate = [&]() -> StatusOr<bool> {
    PullRequests(*model, nullptr, &dense, &sparse, full_shapes);
    DTF_RETURN_IF_ERROR(pull_waiting(/*slots=*/false));
    const std::vector<std::string>& files =
        records.eval.empty() ? records.train : records.eval;
    DTF_RETURN_IF_ERROR(mirror.ToDevice(ctx, model.get()));
    StatusOr<EvalMetrics> evaluated =
        Evaluate(ctx, layer, *model, files,
                 std::max<int64_t>(train.batch_size, 1024), options.cancel);
    DTF_RETURN_IF_ERROR(
        mirror.ToHost(ctx, model.get(), nullptr, nullptr).status());
    if (evaluated.status().code() == absl::StatusCode::kCancelled &&
        is_cancelled()) {
      return cancelled();
    }
    DTF_ASSIGN_OR_RETURN(EvalMetrics metrics, std::move(evaluated));
    DTF_ASSIGN_OR_RETURN(
        result.eval, progress.Evaluated(
                         std::move(metrics), global_step,
                         records.eval.empty() ? "train" : records.eval_split));
    const EvalVerdict verdict = tracker.Observe(*result.eval);
    if (!verdict.warning.empty()) note(verdict.warning);
    if (verdict.improved) DTF_RETURN_IF_ERROR(write_checkpoint_to(best_path));
    return verdict.stop;
  };

  // The step loop is a pipeline: while step k computes, the next batch is
  // read and transformed on the prefetch thread; one Step call per PS then
  // pushes step k's gradients and pulls the rows batch k+1 touches.
  const kernels::Context prepare_ctx = kernels::Context::Cpu(1);
  auto prepare = [&](Prepared* p) {
    auto more = pipeline->Next(&p->batch);
    p->status = more.status();
    p->more = more.ok() && *more;
    p->epoch = pipeline->position().epoch;
    if (!p->more) return;
    p->status = layer.Transform(prepare_ctx, p->batch, true, &p->inputs);
    if (!p->status.ok()) return;
    Compact(&p->inputs, &p->unique);
  };
  Prepared slots[2];
  for (Prepared& slot : slots) PinInputs(ctx, &slot.inputs);
  Prepared* cur = &slots[0];
  Prepared* next = &slots[1];
  Prefetcher prefetcher(prepare);
  prefetcher.Start(cur);
  prefetcher.Wait();
  DTF_RETURN_IF_ERROR(cur->status);
  if (cur->more) {
    PullRequests(*model, &cur->unique, &dense, &sparse, full_shapes);
    DTF_RETURN_IF_ERROR(pull_waiting(/*slots=*/false));
    prefetcher.Start(next);
  }
  // Waits for the prefetch thread on every way out of the loop.
  struct Drain {
    Prefetcher* p;
    ~Drain() { p->Wait(); }
  } drain{&prefetcher};

  while (cur->more) {
    if (is_cancelled()) return cancelled();
    if (train.steps > 0 && global_step >= train.steps) break;
    // The chief stopped training early: end as when the data runs out.
    if (options.end_training != nullptr && options.end_training->load()) {
      note(StrCat(self, ": the chief stopped training at step ", global_step));
      break;
    }
    const auto t0 = Clock::now();
    DTF_ASSIGN_OR_RETURN(const ModelInputs* staged,
                         StageInputs(ctx, cur->inputs, &device_inputs));
    const ModelInputs& inputs = *staged;
    const int64_t rows = cur->batch.rows;
    const int64_t epoch = cur->epoch;
    auto& vars = model->variables();
    before.resize(vars.size());
    for (size_t v = 0; v < vars.size(); ++v) {
      if (!vars[v].trainable) before[v] = vars[v].value.Clone();
    }
    DTF_RETURN_IF_ERROR(mirror.ToDevice(ctx, model.get()));
    DTF_RETURN_IF_ERROR(model->Forward(ctx, inputs, true, &logits));
    DTF_ASSIGN_OR_RETURN(float loss,
                         ComputeLoss(ctx, spec.loss, logits, inputs, &dlogits));
    DTF_RETURN_IF_ERROR(model->Backward(ctx, inputs, dlogits, &grads));
    DTF_ASSIGN_OR_RETURN(const std::vector<Gradient>* step_grads,
                         mirror.ToHost(ctx, model.get(), &grads, &host_grads));

    // Gradients to the PS that hold their rows; for untrainable variables
    // (moving statistics) the change this step made.
    const Partition& part = ps.partition();
    std::vector<std::vector<rpc::TensorPiece>> pieces(size_t(ps.num_ps()));
    for (size_t v = 0; v < vars.size(); ++v) {
      const std::vector<int64_t>& shape = full_shapes[v];
      const int64_t cols = PieceCols(shape);
      if (!vars[v].sparse) {
        const float* g = (*step_grads)[v].dense.data();
        kernels::Tensor delta;
        if (!vars[v].trainable) {
          delta = vars[v].value.Clone();
          for (int64_t i = 0; i < delta.size(); ++i) delta[i] -= before[v][i];
          g = delta.data();
        }
        for (int p = 0; p < ps.num_ps(); ++p) {
          auto [b, e] = part.DenseRange(shape[0], p);
          if (e > b) {
            AppendDensePieces(vars[v].name, shape, g + b * cols, e - b, cols, b,
                              &pieces[size_t(p)]);
          }
        }
        continue;
      }
      const kernels::SparseGrad& sg = (*step_grads)[v].sparse;
      const std::vector<int64_t>& u =
          cur->unique[size_t(model->SparseInputOf(v))];
      std::vector<std::vector<int64_t>> ids(size_t(ps.num_ps()));
      std::vector<std::vector<float>> grad_rows(size_t(ps.num_ps()));
      for (int64_t k = 0; k < sg.ids.size(); ++k) {
        const int64_t id = u[size_t(sg.ids[k])];
        const auto p = size_t(part.Owner(id));
        ids[p].push_back(id);
        grad_rows[p].insert(grad_rows[p].end(), sg.rows.data() + k * cols,
                            sg.rows.data() + (k + 1) * cols);
      }
      for (int p = 0; p < ps.num_ps(); ++p) {
        AppendSparsePieces(vars[v].name, shape, ids[size_t(p)].data(),
                           grad_rows[size_t(p)].data(),
                           int64_t(ids[size_t(p)].size()), cols,
                           &pieces[size_t(p)]);
      }
    }
    // The next batch, then this step's push and the next step's pull.
    prefetcher.Wait();
    DTF_RETURN_IF_ERROR(next->status);
    if (next->more) {
      PullRequests(*model, &next->unique, &dense, &sparse, full_shapes);
    }
    StatusOr<PsClient::PushResult> pushed =
        ps.Step(std::move(pieces), rows, loss, next->more ? &dense : nullptr,
                next->more ? &sparse : nullptr, sync);
    if (pushed.ok()) {
      global_step = pushed->global_step;
    } else if (pushed.status().code() == absl::StatusCode::kUnavailable) {
      // A parameter server went away (and may be restarted from the last
      // checkpoint): this step's gradients are lost; pull again once it is
      // back.
      DTF_RETURN_IF_ERROR(rejoin(pushed.status(), next->more));
    } else {
      return pushed.status();
    }
    std::swap(cur, next);
    if (cur->more) prefetcher.Start(next);

    progress.AddStep(rows, loss, Clock::now() - t0);
    ++local_steps;
    if (train.log_every_steps > 0 && local_steps % train.log_every_steps == 0) {
      progress.Report(global_step, last_epoch);
    }
    bool evaluated = false;
    bool stop = false;
    if (epoch != last_epoch) {
      last_epoch = epoch;
      progress.EndEpoch();
      if (train.log_every_steps == 0) progress.Report(global_step, last_epoch);
      if (chief && train.eval_every_steps == 0) {
        DTF_ASSIGN_OR_RETURN(stop, evaluate());
        evaluated = true;
      }
    }
    if (chief && train.eval_every_steps > 0 &&
        local_steps % train.eval_every_steps == 0) {
      DTF_ASSIGN_OR_RETURN(stop, evaluate());
      evaluated = true;
    }
    if (chief && train.checkpoint_every_steps > 0 &&
        local_steps % train.checkpoint_every_steps == 0) {
      DTF_RETURN_IF_ERROR(write_checkpoint());
      evaluated = true;
    }
    if (stop) {
      // The other workers hear it with their next heartbeat and end as
      // when their data runs out.
      note(tracker.StopNote(global_step));
      if (options.coordinator != nullptr) options.coordinator->StopTraining();
      break;
    }
    if (evaluated && cur->more) {
      // Evaluation and checkpoints pulled whole tables: the next batch's
      // rows again.
      PullRequests(*model, &cur->unique, &dense, &sparse, full_shapes);
      DTF_RETURN_IF_ERROR(pull_waiting(/*slots=*/false));
    }
  }
  progress.Report(global_step, last_epoch);
  result.steps = global_step;
  result.loss = progress.loss();
  result.examples = progress.examples();
  result.train_seconds = progress.train_seconds();
  result.examples_per_sec = progress.examples_per_sec();
  DTF_RETURN_IF_ERROR(ps.WorkerDone());
  if (!chief) return result;

  // The chief ends the run: wait for the other workers, evaluate, write the
  // checkpoint and the export, and send every PS home.
  options.coordinator->Update(self, "done", global_step, result.loss,
                              result.examples_per_sec);
  const auto silent = std::chrono::seconds(train.heartbeat_timeout);
  for (auto last_note = Clock::now();;) {
    std::vector<std::string> running =
        options.coordinator->RunningWorkers(self, silent);
    if (running.empty()) break;
    if (is_cancelled()) return cancelled();
    if (Clock::now() - last_note > std::chrono::seconds(10)) {
      note(StrCat("waiting for ", running.size(), " worker(s) to finish"));
      last_note = Clock::now();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  options.coordinator->SetRunState("evaluating", global_step);
  DTF_RETURN_IF_ERROR(evaluate().status());
  result.steps = std::max(global_step, result.eval->step);
  DTF_RETURN_IF_ERROR(write_checkpoint());
  result.checkpoint = checkpoint_path;
  RecordBest(tracker, best_path, &result);
  result.export_dir = (fs::path(train.output_dir) / kExportDir).string();
  DTF_RETURN_IF_ERROR(ExportBest(tracker, best_path, result.export_dir,
                                 model_toml, &layer, model.get()));
  DTF_RETURN_IF_ERROR(events->Close());
  options.coordinator->SetRunState("finished", global_step);
  options.coordinator->EndRun();
  DTF_RETURN_IF_ERROR(ps.Shutdown("the run finished"));
  return result;
}

}  // namespace dtf::runtime
