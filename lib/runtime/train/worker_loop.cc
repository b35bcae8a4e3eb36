#include "lib/runtime/train/worker_loop.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <utility>

#include "lib/base/strings.h"
#include "lib/base/task_name.h"
#include "lib/data/input_pipeline.h"
#include "lib/data/job_toml.h"
#include "lib/runtime/checkpoint/checkpoint_files.h"
#include "lib/runtime/checkpoint/event_writer.h"
#include "lib/runtime/model/device.h"
#include "lib/runtime/train/chief.h"
#include "lib/runtime/train/input_trace.h"
#include "lib/runtime/train/task_threads.h"
#include "lib/runtime/train/train_loop.h"
#include "lib/runtime/train/train_step.h"

namespace dtf::runtime {

StatusOr<kernels::Context> MakeWorkerContext(const JobFile& job,
                                             const WorkerOptions& options) {
  int threads = options.threads > 0 ? options.threads : int(job.train.threads);
  if (threads <= 0 && !job.train.device.cuda &&
      size_t(options.index) < options.workers.size()) {
    threads = SharedHostThreads(options.ps, options.workers,
                                options.workers[size_t(options.index)],
                                ThisProcessCpus());
  }
  return MakeComputeContext(job.train.device, threads);
}

TrainHooks WorkerHooks(const WorkerOptions& options) {
  TrainHooks hooks;
  hooks.on_progress = options.on_progress;
  hooks.on_eval = options.on_eval;
  hooks.on_note = options.on_note;
  hooks.on_step = options.on_step;
  hooks.input_shards = options.input_shards;
  hooks.input_released = options.input_released;
  hooks.cancel = options.cancel;
  return hooks;
}

StatusOr<InputPosition> ResumePosition(const JobFile& job,
                                       const WorkerOptions& options,
                                       const TrainHooks& hooks) {
  std::string why;
  DTF_ASSIGN_OR_RETURN(
      std::optional<Bundle> own,
      FindRunCheckpoint(job.train.output_dir, options.credentials.run_id,
                        CheckpointFingerprint(job), &why));
  const std::string self = TaskName{Role::kWorker, options.index}.ToString();
  if (!own) {
    hooks.Note(StrCat(self, ": ", why, "; reading the input from the start"));
    return InputPosition{};
  }
  DTF_ASSIGN_OR_RETURN(const CheckpointInfo info, ReadCheckpointInfo(*own));
  // Each worker's position as the checkpoint recorded it: committed with
  // its variables (Chief::TakeCommittedPositions), or as the worker last
  // reported it. A worker whose position the checkpoint lacks (not heard
  // from yet, or a checkpoint of an older dtf) reads its share of the
  // chief's epoch again from its start.
  const size_t i = size_t(options.index);
  std::optional<InputPosition> at;
  if (i == 0) {
    at = info.position;
  } else if (i < info.worker_positions.size()) {
    at = info.worker_positions[i];
  }
  std::string whence = "its recorded position";
  if (!at) {
    at = InputPosition{info.position.epoch, 0, 0, 0};
    whence = "the start of the chief's epoch: its position is not recorded";
  }
  hooks.Note(StrCat(self, ": resuming at global step ", info.global_step,
                    ", epoch ", at->epoch + 1, ", record ", at->epoch_record,
                    " of its input (", whence, "; ", own->path(), ")"));
  return *at;
}

InputPosition CommittedResumePosition(const WorkerOptions& options,
                                      const TrainHooks& hooks, Update& update,
                                      const InputPosition& recorded) {
  if (!update.commits_positions()) return recorded;
  const std::string self = TaskName{Role::kWorker, options.index}.ToString();
  StatusOr<std::vector<std::optional<InputPosition>>> committed =
      update.FetchCommittedPositions();
  if (!committed.ok()) {
    hooks.Note(StrCat(self, ": the parameter servers' committed input ",
                      "positions: ", Message(committed.status()),
                      "; resuming at the checkpoint's"));
    return recorded;
  }
  const size_t i = size_t(options.index);
  if (i >= committed->size() || !(*committed)[i]) return recorded;
  const InputPosition& at = *(*committed)[i];
  // The whole position: where shuffling drains its buffer at an epoch's
  // end, the records read stay and only those yielded (emitted) move on.
  if (PositionNumbers(at) <= PositionNumbers(recorded)) return recorded;
  hooks.Note(StrCat(self, ": resuming at epoch ", at.epoch + 1, ", record ",
                    at.epoch_record, " of its input instead (the position ",
                    "the parameter servers committed with its last batch ",
                    "their variables hold: they went on past the checkpoint)"));
  return at;
}

StatusOr<InputPosition> SkipBatches(InputPipeline& input, int64_t n) {
  Batch batch;
  for (int64_t i = 0; i < n; ++i) {
    DTF_ASSIGN_OR_RETURN(const bool more, input.Next(&batch));
    if (!more) break;
  }
  return input.position();
}

StatusOr<std::vector<InputShard>> StartShards(
    const InputPipelineOptions& own, int own_shard,
    const std::vector<ShardStart>& others) {
  std::vector<InputShard> listed{{own_shard, own.start}};
  for (const ShardStart& o : others) {
    InputPosition at = o.at;
    if (o.skip_batches > 0) {
      InputPipelineOptions input = own;
      input.reader_index = o.shard;
      input.start = o.at;
      DTF_ASSIGN_OR_RETURN(auto pipeline, InputPipeline::Create(input));
      DTF_ASSIGN_OR_RETURN(at, SkipBatches(*pipeline, o.skip_batches));
    }
    listed.push_back({o.shard, at});
  }
  return listed;
}

StatusOr<WorkerModel> BuildWorkerModel(const JobFile& job,
                                       const kernels::Context& ctx,
                                       bool sparse_rows) {
  const TrainSpec& train = job.train;
  WorkerModel built;
  DTF_ASSIGN_OR_RETURN(built.records, FindJobRecords(job));
  DTF_ASSIGN_OR_RETURN(
      FeatureLayer layer,
      FeatureLayer::Create(job.schema, job.features, *job.model));
  built.layer = std::make_unique<FeatureLayer>(std::move(layer));
  if (built.layer->needs_normalizer()) {
    DTF_RETURN_IF_ERROR(
        FitNormalizer(HostContext(ctx), built.records.train, built.layer.get())
            .status());
  }
  DTF_ASSIGN_OR_RETURN(
      built.model, Model::Create(*built.layer, *job.model, uint64_t(train.seed),
                                 sparse_rows));
  return built;
}

StatusOr<TrainResult> RunWorkerLoop(
    const JobFile& job, const WorkerOptions& options, const TrainHooks& hooks,
    const kernels::Context& ctx, WorkerModel& built, Update& update,
    const std::optional<WorkerInputStart>& start) {
  const TrainSpec& train = job.train;
  const JobRecords& records = built.records;
  const int num_workers = std::max(1, int(options.workers.size()));
  InputPipelineOptions input;
  input.files = records.train;
  input.features = InputTrace::WithTracedColumn(
      built.layer->ParseSpecs(/*with_label=*/true));
  input.batch_size = train.batch_size;
  input.epochs = train.steps > 0 ? -1 : train.epochs;
  input.shuffle_buffer_size = train.shuffle_buffer;
  input.seed = uint64_t(train.seed);
  input.cache = TrainInputCache(train, HostContext(ctx).num_threads());
  input.reader_index = options.index;
  input.reader_count = num_workers;
  if (start) {
    input.start = start->at;
  } else if (options.resume) {
    DTF_ASSIGN_OR_RETURN(input.start, ResumePosition(job, options, hooks));
    input.start = CommittedResumePosition(options, hooks, update, input.start);
  }
  DTF_ASSIGN_OR_RETURN(auto pipeline, InputPipeline::Create(input));
  if (start && start->skip_batches > 0) {
    DTF_ASSIGN_OR_RETURN(input.start,
                         SkipBatches(*pipeline, start->skip_batches));
  }

  std::unique_ptr<Chief> chief;
  if (options.index == 0) {
    ChiefOptions c;
    c.output_dir = train.output_dir;
    c.model_toml = ModelDefinitionToToml(job);
    c.eval_files = records.eval.empty() ? records.train : records.eval;
    c.eval_split = records.eval.empty() ? "train" : records.eval_split;
    c.eval_batch_size = std::max<int64_t>(train.batch_size, 1024);
    c.coordinator = options.coordinator;
    c.heartbeat_timeout = std::chrono::seconds(train.heartbeat_timeout);
    c.start_timeout = std::chrono::seconds(train.coordinator_timeout);
    c.origin = {options.credentials.run_id, CheckpointFingerprint(job)};
    c.keep_checkpoints = train.keep_checkpoints;
    c.sharded_checkpoints = train.sharded_checkpoints;
    c.resumed = options.resume;
    // TensorBoard events: training loss and throughput at each report,
    // evaluation metrics at each evaluation.
    // This process's id and a count of the chiefs it has run in the name
    // (as TensorFlow's writers put theirs): a run started in the same
    // second as the last one into the same output directory, by another
    // process or by this one, gets a file of its own.
    static std::atomic<int> chiefs_started{0};
    DTF_ASSIGN_OR_RETURN(
        c.events,
        EventWriter::Create(train.output_dir,
                            StrCat(".", getpid(), ".", chiefs_started++)));
    chief = std::make_unique<Chief>(train, std::move(c), ctx, built.layer.get(),
                                    hooks);
  }
  TrainLoopOptions loop;
  loop.name = TaskName{Role::kWorker, options.index}.ToString();
  loop.loss = job.model->loss;
  loop.max_steps = train.steps;
  loop.log_every_steps = train.log_every_steps;
  loop.eval_every_steps = train.eval_every_steps;
  loop.checkpoint_every_steps = train.checkpoint_every_steps;
  loop.end_training = update.collective() ? nullptr : options.end_training;
  loop.start = input.start;
  // The chief's position is the one a checkpoint records.
  loop.record_position = options.index == 0;
  TrainLoopParts parts;
  parts.ctx = &ctx;
  parts.layer = built.layer.get();
  parts.model = built.model.get();
  parts.input = pipeline.get();
  parts.own_shard = options.index;
  // An allreduce rank's shards besides its own, a fixed list.
  TrainHooks loop_hooks = hooks;
  const bool dealt = start && !start->others.empty();
  if (dealt) {
    DTF_ASSIGN_OR_RETURN(std::vector<InputShard> listed,
                         StartShards(input, options.index, start->others));
    loop_hooks.input_shards = [listed] {
      return AssignedShards{listed, false};
    };
    loop_hooks.input_released = nullptr;
  }
  if ((!update.collective() || dealt) && num_workers > 1) {
    // Another worker's shard, handed on to this one (sharded_input.h).
    parts.open_shard = [input](int shard, const InputPosition& at) {
      InputPipelineOptions other = input;
      other.reader_index = shard;
      other.start = at;
      return InputPipeline::Create(std::move(other));
    };
  }
  parts.update = &update;
  parts.chief = chief.get();
  return RunTrainLoop(loop, loop_hooks, parts);
}

}  // namespace dtf::runtime
