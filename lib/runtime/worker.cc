#include "lib/runtime/worker.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <thread>

#include "lib/base/strings.h"
#include "lib/data/input_pipeline.h"
#include "lib/data/job_toml.h"
#include "lib/kernels/context.h"
#include "lib/runtime/checkpoint.h"
#include "lib/runtime/event_writer.h"
#include "lib/runtime/job_records.h"
#include "lib/runtime/model.h"
#include "lib/runtime/ps_client.h"
#include "lib/runtime/tensor_pieces.h"
#include "lib/runtime/train_step.h"

namespace dtf::runtime {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

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
void PullRequests(Model& model, const std::vector<std::vector<int64_t>>* unique,
                  std::vector<PsClient::DenseVar>* dense,
                  std::vector<PsClient::SparseVar>* sparse,
                  const std::vector<std::vector<int64_t>>& full_shapes) {
  dense->clear();
  sparse->clear();
  auto& vars = model.variables();
  for (size_t v = 0; v < vars.size(); ++v) {
    if (!vars[v].sparse) {
      dense->push_back({vars[v].name, &vars[v].value});
      continue;
    }
    PsClient::SparseVar s;
    s.name = vars[v].name;
    s.rows = full_shapes[v][0];
    s.cols = PieceCols(full_shapes[v]);
    s.out = &vars[v].value;
    if (unique == nullptr) {
      s.all = true;
    } else {
      s.ids = &(*unique)[size_t(model.SparseInputOf(v))];
    }
    sparse->push_back(s);
  }
}

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
  const kernels::Context ctx = kernels::Context::Cpu(
      options.threads > 0 ? options.threads : int(train.threads));
  DTF_ASSIGN_OR_RETURN(JobRecords records, FindJobRecords(job));
  DTF_ASSIGN_OR_RETURN(FeatureLayer layer,
                       FeatureLayer::Create(job.schema, job.features, spec));
  if (layer.needs_normalizer()) {
    DTF_RETURN_IF_ERROR(FitNormalizer(ctx, records.train, &layer).status());
  }
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<Model> model,
                       Model::Create(layer, spec, uint64_t(train.seed)));
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
  Batch batch;
  ModelInputs inputs;
  kernels::Tensor logits, dlogits;
  std::vector<Gradient> grads;
  std::vector<std::vector<int64_t>> unique;
  std::vector<PsClient::DenseVar> dense;
  std::vector<PsClient::SparseVar> sparse;
  std::vector<kernels::Tensor> before;  // untrainable values as pulled
  int64_t min_step = 0;
  int64_t local_steps = 0, global_step = 0;
  double window_loss = 0, epoch_loss = 0;
  int64_t window_rows = 0, epoch_rows = 0, window_steps = 0;
  int64_t last_epoch = 0;
  Clock::duration in_steps{}, window_time{};
  const auto start = Clock::now();
  auto report = [&]() {
    if (window_steps == 0) return;
    TrainProgress p;
    p.step = global_step;
    p.epoch = pipeline->position().epoch;
    p.examples = result.examples;
    p.loss = window_loss / double(window_rows);
    p.examples_per_sec = double(window_rows) / Seconds(window_time);
    p.elapsed_seconds = Seconds(Clock::now() - start);
    result.loss = p.loss;
    if (options.coordinator) {
      options.coordinator->Update(self, "running", global_step, p.loss,
                                  p.examples_per_sec);
      options.coordinator->SetRunState("running", global_step);
    }
    if (options.on_progress) options.on_progress(p);
    if (events) {
      Status st = events->AddScalars(
          {{"loss", p.loss}, {"examples_per_sec", p.examples_per_sec}},
          global_step);
      if (st.ok()) st = events->Flush();
      if (!st.ok()) note(StrCat("TensorBoard events: ", Message(st)));
    }
    window_loss = 0;
    window_rows = window_steps = 0;
    window_time = {};
  };

  // The chief evaluates with every row of every variable pulled.
  auto evaluate = [&]() -> Status {
    PullRequests(*model, nullptr, &dense, &sparse, full_shapes);
    DTF_RETURN_IF_ERROR(ps.Pull(dense, sparse, 0));
    const std::vector<std::string>& files =
        records.eval.empty() ? records.train : records.eval;
    DTF_ASSIGN_OR_RETURN(
        EvalMetrics metrics,
        Evaluate(ctx, layer, *model, files,
                 std::max<int64_t>(train.batch_size, 1024), options.cancel));
    if (options.coordinator)
      options.coordinator->SetEvalMetrics(metrics.values);
    if (events) {
      std::vector<std::pair<std::string, double>> scalars;
      for (const auto& [name, value] : metrics.values) {
        scalars.emplace_back(StrCat("eval/", name), value);
      }
      DTF_RETURN_IF_ERROR(events->AddScalars(scalars, global_step));
      DTF_RETURN_IF_ERROR(events->Flush());
    }
    EvalReport report{global_step, std::move(metrics),
                      records.eval.empty() ? "train" : records.eval_split};
    if (options.on_eval) options.on_eval(report);
    result.eval = std::move(report);
    return OkStatus();
  };

  while (true) {
    if (options.cancel != nullptr && options.cancel->load()) {
      return CancelledError(StrCat(self, ": stopped at step ", global_step));
    }
    if (train.steps > 0 && global_step >= train.steps) break;
    const auto t0 = Clock::now();
    DTF_ASSIGN_OR_RETURN(bool more, pipeline->Next(&batch));
    if (!more) break;
    DTF_RETURN_IF_ERROR(layer.Transform(ctx, batch, true, &inputs));
    Compact(&inputs, &unique);
    PullRequests(*model, &unique, &dense, &sparse, full_shapes);
    DTF_RETURN_IF_ERROR(ps.Pull(dense, sparse, sync ? min_step : 0));
    auto& vars = model->variables();
    before.resize(vars.size());
    for (size_t v = 0; v < vars.size(); ++v) {
      if (!vars[v].trainable) before[v] = vars[v].value.Clone();
    }
    DTF_RETURN_IF_ERROR(model->Forward(ctx, inputs, true, &logits));
    DTF_ASSIGN_OR_RETURN(float loss,
                         ComputeLoss(ctx, spec.loss, logits, inputs, &dlogits));
    DTF_RETURN_IF_ERROR(model->Backward(ctx, inputs, dlogits, &grads));

    // Gradients to the PS that hold their rows; for untrainable variables
    // (moving statistics) the change this step made.
    const Partition& part = ps.partition();
    std::vector<std::vector<rpc::TensorPiece>> pieces(size_t(ps.num_ps()));
    for (size_t v = 0; v < vars.size(); ++v) {
      const std::vector<int64_t>& shape = full_shapes[v];
      const int64_t cols = PieceCols(shape);
      if (!vars[v].sparse) {
        const float* g = grads[v].dense.data();
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
      const kernels::SparseGrad& sg = grads[v].sparse;
      const std::vector<int64_t>& u = unique[size_t(model->SparseInputOf(v))];
      std::vector<std::vector<int64_t>> ids(size_t(ps.num_ps()));
      std::vector<std::vector<float>> rows(size_t(ps.num_ps()));
      for (int64_t k = 0; k < sg.ids.size(); ++k) {
        const int64_t id = u[size_t(sg.ids[k])];
        const auto p = size_t(part.Owner(id));
        ids[p].push_back(id);
        rows[p].insert(rows[p].end(), sg.rows.data() + k * cols,
                       sg.rows.data() + (k + 1) * cols);
      }
      for (int p = 0; p < ps.num_ps(); ++p) {
        AppendSparsePieces(
            vars[v].name, shape, ids[size_t(p)].data(), rows[size_t(p)].data(),
            int64_t(ids[size_t(p)].size()), cols, &pieces[size_t(p)]);
      }
    }
    const int64_t pulled_step = ps.steps().empty() ? 0 : ps.steps()[0];
    DTF_ASSIGN_OR_RETURN(PsClient::PushResult pushed,
                         ps.Push(std::move(pieces), batch.rows, loss));
    global_step = pushed.global_step;
    if (sync) min_step = pulled_step + 1;

    const auto step_time = Clock::now() - t0;
    in_steps += step_time;
    window_time += step_time;
    ++local_steps;
    result.examples += batch.rows;
    window_loss += double(loss) * double(batch.rows);
    epoch_loss += double(loss) * double(batch.rows);
    window_rows += batch.rows;
    epoch_rows += batch.rows;
    ++window_steps;
    if (train.log_every_steps > 0 && local_steps % train.log_every_steps == 0) {
      report();
    }
    const int64_t epoch = pipeline->position().epoch;
    if (epoch != last_epoch) {
      last_epoch = epoch;
      result.loss = epoch_loss / double(epoch_rows);
      epoch_loss = 0;
      epoch_rows = 0;
      if (train.log_every_steps == 0) report();
      if (chief && train.eval_every_steps == 0) DTF_RETURN_IF_ERROR(evaluate());
    }
    if (chief && train.eval_every_steps > 0 &&
        local_steps % train.eval_every_steps == 0) {
      DTF_RETURN_IF_ERROR(evaluate());
    }
  }
  report();
  result.steps = global_step;
  result.train_seconds = Seconds(in_steps);
  result.examples_per_sec = result.train_seconds > 0
                                ? double(result.examples) / result.train_seconds
                                : 0;
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
    if (options.cancel != nullptr && options.cancel->load()) {
      return CancelledError("stopped while waiting for the other workers");
    }
    if (Clock::now() - last_note > std::chrono::seconds(10)) {
      note(StrCat("waiting for ", running.size(), " worker(s) to finish"));
      last_note = Clock::now();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  options.coordinator->SetRunState("evaluating", global_step);
  DTF_RETURN_IF_ERROR(evaluate());
  result.steps = std::max(global_step, result.eval->step);
  const std::string model_toml = ModelDefinitionToToml(job);
  std::error_code ec;
  fs::create_directories(train.output_dir, ec);
  result.checkpoint = (fs::path(train.output_dir) / kCheckpointFile).string();
  TrainState state;
  state.global_step = global_step;
  DTF_RETURN_IF_ERROR(MakeCheckpoint(layer, *model, {}, state, model_toml)
                          .WriteFile(result.checkpoint));
  result.export_dir = (fs::path(train.output_dir) / kExportDir).string();
  DTF_RETURN_IF_ERROR(
      ExportModel(result.export_dir, model_toml, layer, *model));
  DTF_RETURN_IF_ERROR(events->Close());
  options.coordinator->SetRunState("finished", global_step);
  options.coordinator->EndRun();
  DTF_RETURN_IF_ERROR(ps.Shutdown("the run finished"));
  return result;
}

}  // namespace dtf::runtime
