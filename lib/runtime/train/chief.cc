#include "lib/runtime/train/chief.h"

#include <filesystem>
#include <thread>
#include <utility>

#include "lib/base/strings.h"
#include "lib/runtime/checkpoint/checkpoint_files.h"
#include "lib/runtime/checkpoint/sharded_checkpoint.h"
#include "lib/runtime/cluster/coordinator_service.h"
#include "lib/runtime/export/exported_model.h"
#include "lib/runtime/train/best_eval.h"
#include "lib/runtime/train/evaluator.h"

namespace dtf::runtime {

namespace fs = std::filesystem;

Chief::Chief(const TrainSpec& train, ChiefOptions options,
             const kernels::Context& ctx, FeatureLayer* layer,
             const TrainHooks& hooks)
    : options_(std::move(options)),
      ctx_(ctx),
      layer_(layer),
      hooks_(hooks),
      tracker_(train),
      checkpoint_path_(
          (fs::path(options_.output_dir) / kCheckpointFile).string()),
      best_path_(
          (fs::path(options_.output_dir) / kBestCheckpointFile).string()),
      sharded_best_(ShardedBestPrefix(options_.output_dir)) {
  if (train.input_cache) {
    eval_cache_.budget_bytes = train.input_cache_memory_mb << 20;
  }
  if (options_.resumed) RestoreBest();
  if (options_.coordinator != nullptr && train.mode != TrainMode::kAllreduce) {
    options_.coordinator->WatchInput(options_.heartbeat_timeout,
                                     options_.start_timeout);
  }
}

void Chief::RestoreBest() {
  std::error_code ec;
  StatusOr<Bundle> bundle = NotFoundError("");
  std::string path = best_path_;
  if (options_.sharded_checkpoints &&
      fs::exists(ShardedIndexPath(sharded_best_), ec)) {
    path = sharded_best_;
    StatusOr<std::unique_ptr<ShardedCheckpointReader>> reader =
        ShardedCheckpointReader::Open(sharded_best_);
    bundle = reader.ok() ? (*reader)->ReadUnsliced() : reader.status();
  } else if (fs::exists(best_path_, ec)) {
    bundle = Bundle::ReadFile(best_path_);
  } else {
    return;
  }
  StatusOr<std::optional<EvalReport>> best =
      bundle.ok() ? ReadBestEval(*bundle) : bundle.status();
  if (best.ok() && best->has_value()) {
    StatusOr<CheckpointInfo> info = ReadCheckpointInfo(*bundle);
    if (!info.ok()) {
      best = info.status();
    } else if (!info->job_fingerprint.empty() &&
               info->job_fingerprint != options_.origin.job_fingerprint) {
      best = FailedPreconditionError(
          StrCat(path, " was written for another job (fingerprint ",
                 info->job_fingerprint, ")"));
    }
  }
  if (!best.ok()) {
    hooks_.Note(StrCat("not keeping the best evaluation so far: ",
                       Message(best.status())));
    return;
  }
  if (!best->has_value()) return;
  tracker_.Restore(**best);
  if (!tracker_.best()) return;
  hooks_.Note(fmt::format(
      "the best evaluation so far is step {}'s ({} {:.4f}, {}); a later one "
      "must beat it",
      tracker_.best()->step, tracker_.metric(),
      *tracker_.best()->metrics.Get(tracker_.metric()), path));
}

StatusOr<bool> Chief::Evaluate(Update& update, Progress& progress,
                               const TrainState& state, TrainResult* result) {
  // The other workers may wait for the chief meanwhile.
  const WatchPause pause(options_.coordinator);
  StatusOr<EvalMetrics> metrics = EvalMetrics{};
  DTF_RETURN_IF_ERROR(
      update.WithEvalModel([&](Model& model, const EvalPrepare& prepare) {
        metrics = runtime::Evaluate(ctx_, *layer_, model, options_.eval_files,
                                    options_.eval_batch_size, hooks_.cancel,
                                    &eval_cache_, prepare);
        return OkStatus();
      }));
  DTF_RETURN_IF_ERROR(metrics.status());
  DTF_ASSIGN_OR_RETURN(
      result->eval, progress.Evaluated(*std::move(metrics), state.global_step,
                                       options_.eval_split));
  last_eval_step_ = state.global_step;
  const EvalVerdict verdict = tracker_.Observe(*result->eval);
  if (!verdict.warning.empty()) hooks_.Note(verdict.warning);
  if (verdict.improved) {
    DTF_RETURN_IF_ERROR(ShardedRun(update)
                            ? WriteShardedBest(update, state)
                            : WriteCheckpointTo(update, state, best_path_));
  }
  return verdict.stop;
}

void Chief::TakeCommittedPositions(const Update& update, TrainState* cut) {
  if (!update.commits_positions()) return;
  const std::vector<std::optional<InputPosition>> committed =
      update.committed_positions();
  if (cut->worker_positions.size() < committed.size()) {
    cut->worker_positions.resize(committed.size());
  }
  for (size_t i = 0; i < committed.size(); ++i) {
    if (committed[i]) cut->worker_positions[i] = committed[i];
  }
  if (!cut->worker_positions.empty() && cut->worker_positions[0]) {
    cut->position = *cut->worker_positions[0];
  }
}

Status Chief::WriteCheckpointTo(Update& update, const TrainState& state,
                                const std::string& path) {
  // Every worker's input position. Where the update commits them
  // (Update::commits_positions), those of the batches in the variables
  // the checkpoint holds, read with them (TakeCommittedPositions): a
  // restored run neither skips nor reads again a batch. Else, and for a
  // worker none is committed for yet, as the workers last reported them,
  // taken before the variables are pulled: every step a position counts
  // was in the variables when it was reported (Update::AppliedOnReturn),
  // so it is in the checkpoint too; steps in flight, and those since the
  // report, are read again after a resume: at least once. For a
  // generation (what a restarted or resumed worker reads) those of this
  // step are waited for a little (PositionWait), the watchdog not paused
  // meanwhile: a training worker reports within PositionHeartbeatDelay (a
  // sync step's other workers wait for the chief).
  std::vector<std::optional<InputPosition>> workers;
  if (options_.coordinator != nullptr) {
    const bool wait = path.empty() && !update.commits_positions();
    workers = options_.coordinator->WorkerPositions(
        state.global_step, wait ? PositionWait(options_.coordinator->workers())
                                : std::chrono::milliseconds(0));
    if (workers.empty()) workers.resize(1);
    workers[0] = state.position;
  }
  const WatchPause pause(options_.coordinator);
  std::error_code ec;
  fs::create_directories(options_.output_dir, ec);
  if (path.empty() && ShardedRun(update)) {
    TrainState cut = state;
    cut.worker_positions = workers;
    return WriteShardedCheckpoint(update, std::move(cut));
  }
  return update.WithHostModel(
      /*slots=*/true,
      [&](Model* model, const std::vector<kernels::OptimizerState>& states) {
        TrainState cut = state;
        cut.ps_steps = update.shard_steps();
        cut.worker_positions = workers;
        TakeCommittedPositions(update, &cut);
        Bundle bundle = MakeCheckpoint(*layer_, *model, states, cut,
                                       options_.model_toml, options_.origin);
        if (path == best_path_ && tracker_.best()) {
          AddBestEval(*tracker_.best(), &bundle);
        }
        if (!path.empty()) return bundle.WriteFile(path);
        return WriteCheckpointGeneration(bundle, options_.output_dir,
                                         state.global_step,
                                         options_.keep_checkpoints);
      });
}

void Chief::Done(const std::string& self, int64_t step,
                 const TrainResult& result) {
  if (options_.coordinator == nullptr) return;
  options_.coordinator->Update(self, TaskState::kDone, step, result.loss,
                               result.examples_per_sec);
}

bool Chief::HandsInputOn(const Update& update) const {
  return options_.coordinator != nullptr && !update.collective() &&
         update.commits_positions();
}

void Chief::HandOnInput(Update& update, bool now) {
  using Clock = std::chrono::steady_clock;
  CoordinatorService* coordinator = options_.coordinator;
  if (!HandsInputOn(update) ||
      (!now && Clock::now() - handed_on_at_ < std::chrono::milliseconds(200))) {
    return;
  }
  handed_on_at_ = Clock::now();
  if (!coordinator->HasInputToHandOn()) return;
  // The positions as they stand: the last checkpoint's are older, and a
  // worker's heartbeat may lag its steps by a few batches.
  StatusOr<std::vector<std::optional<InputPosition>>> committed =
      update.FetchCommittedPositions();
  if (!committed.ok()) {
    hooks_.Note(StrCat("the parameter servers' committed input positions: ",
                       Message(committed.status()),
                       "; handing on from the last ones known"));
    committed = update.committed_positions();
  }
  for (const std::string& note : coordinator->HandOnInput(*committed)) {
    hooks_.Note(note);
  }
}

bool Chief::AwaitInput(const std::string& self, Update& update,
                       const std::function<bool()>& has_more) {
  if (!HandsInputOn(update)) return false;
  while (!hooks_.cancelled()) {
    // Looked at before the shards are: a worker that stops counting as
    // running meanwhile has its shard handed on below.
    const bool others = !options_.coordinator
                             ->RunningWorkers(self, options_.heartbeat_timeout,
                                              options_.start_timeout)
                             .empty();
    HandOnInput(update, /*now=*/true);
    if (has_more()) return true;
    if (!others) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

Status Chief::WaitForWorkers(const std::string& self, Update& update) {
  if (options_.coordinator == nullptr) return OkStatus();
  using Clock = std::chrono::steady_clock;
  for (auto last_note = Clock::now();;) {
    std::vector<std::string> running = options_.coordinator->RunningWorkers(
        self, options_.heartbeat_timeout, options_.start_timeout);
    // The chief reads no more: a shard handed on now goes to a worker
    // still training.
    HandOnInput(update, /*now=*/true);
    if (running.empty()) {
      for (const std::string& note : options_.coordinator->UnreadShards()) {
        hooks_.Note(note);
      }
      return OkStatus();
    }
    if (hooks_.cancelled()) return CancelledError("the run was cancelled");
    if (Clock::now() - last_note > std::chrono::seconds(10)) {
      hooks_.Note(
          StrCat("waiting for ", running.size(), " worker(s) to finish"));
      last_note = Clock::now();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void Chief::SetRunState(RunState state, int64_t step) {
  if (options_.coordinator != nullptr) {
    options_.coordinator->SetRunState(state, step);
  }
}

Status Chief::Finish(Update& update, const TrainState& state,
                     TrainResult* result) {
  const WatchPause pause(options_.coordinator);
  DTF_RETURN_IF_ERROR(WriteCheckpoint(update, state));
  result->checkpoint = checkpoint_path_;
  RecordBest(tracker_,
             ShardedRun(update) ? fs::path(sharded_best_).parent_path().string()
                                : best_path_,
             result);
  result->export_dir = (fs::path(options_.output_dir) / kExportDir).string();
  if (ShardedRun(update)) {
    DTF_RETURN_IF_ERROR(ExportSharded(update, result->export_dir));
  } else {
    DTF_RETURN_IF_ERROR(update.WithHostModel(
        /*slots=*/false,
        [&](Model* model, const std::vector<kernels::OptimizerState>&) {
          return ExportBest(tracker_, best_path_, result->export_dir,
                            options_.model_toml, layer_, model);
        }));
  }
  if (options_.events != nullptr) {
    DTF_RETURN_IF_ERROR(options_.events->Close());
  }
  SetRunState(RunState::kFinished, state.global_step);
  if (options_.coordinator != nullptr) options_.coordinator->EndRun();
  return OkStatus();
}

}  // namespace dtf::runtime
