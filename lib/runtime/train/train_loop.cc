#include "lib/runtime/train/train_loop.h"

#include <chrono>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "lib/base/strings.h"
#include "lib/runtime/checkpoint/checkpoint.h"
#include "lib/runtime/cluster/coordinator_service.h"
#include "lib/runtime/model/device.h"
#include "lib/runtime/train/batch_queue.h"
#include "lib/runtime/train/input_trace.h"
#include "lib/runtime/train/progress.h"
#include "lib/runtime/train/train_step.h"

namespace dtf::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// Test only: the steps after which task `name` freezes its training thread
// for good, as DTF_TEST_FREEZE_AT="<task>@<steps>" (e.g. "worker:1@20")
// asks; -1 when it does not name this task. The tests of the chief's
// step-progress watchdog use it: the process lives on, heartbeats and all,
// while it trains no more.
int64_t TestFreezeAt(std::string_view name) {
  const char* env = std::getenv("DTF_TEST_FREEZE_AT");
  if (env == nullptr || name.empty()) return -1;
  const std::string_view spec(env);
  const size_t at = spec.rfind('@');
  if (at == std::string_view::npos || spec.substr(0, at) != name) return -1;
  int64_t steps = 0;
  for (const char c : spec.substr(at + 1)) {
    if (c < '0' || c > '9') return -1;
    steps = steps * 10 + (c - '0');
  }
  return steps;
}

class TrainLoop {
 public:
  TrainLoop(const TrainLoopOptions& options, const TrainHooks& hooks,
            const TrainLoopParts& parts)
      : o_(options),
        hooks_(hooks),
        ctx_(*parts.ctx),
        layer_(*parts.layer),
        model_(*parts.model),
        input_(*parts.input, parts.own_shard, parts.open_shard,
               hooks.input_shards, hooks.input_released,
               [&hooks] { return hooks.cancelled(); }),
        update_(*parts.update),
        chief_(parts.chief),
        progress_(hooks, chief_ ? chief_->coordinator() : nullptr, o_.name,
                  chief_ ? chief_->events() : nullptr),
        position_(o_.start),
        reported_(o_.start),
        last_epoch_(o_.start.epoch),
        freeze_at_(TestFreezeAt(o_.name)),
        trace_(InputTrace::FromEnvironment(o_.name)) {}

  StatusOr<TrainResult> Run();

 private:
  // Trains until the loop ends; whether it ended by a cancel agreed on.
  StatusOr<bool> Steps();
  // One step on *cur; `cur` becomes the next batch — unless a vote in
  // Apply ended the loop (Update::Agreed), which leaves the step unapplied
  // and uncounted.
  Status Step(PreparedBatch*& cur, BatchQueue& batches);
  // The reports, evaluations and checkpoints due after a step; whether
  // training stops early.
  StatusOr<bool> AfterStep();
  // The chief's end of the run, every rank having stopped.
  StatusOr<TrainResult> Finish();
  Status Cancelled();
  // A collective update's Agree or Apply failed with `st` (a peer lost or
  // hung, or the run cancelled while it waited): the loop ends with the
  // error, the chief writing its checkpoint first as on cancel.
  Status UpdateFailed(const Status& st);
  // Ends the loop with `code`, saying why after the step it stopped at;
  // the chief writes its checkpoint first, if its variables are whole.
  Status Stopped(absl::StatusCode code, std::string_view why);
  TrainState State() const;
  // A call (an update's, an evaluation's, a checkpoint's) that a cancel
  // interrupted.
  bool CutShort(const Status& st) const {
    return st.code() == absl::StatusCode::kCancelled && hooks_.cancelled();
  }

  const TrainLoopOptions& o_;
  const TrainHooks& hooks_;
  const kernels::Context& ctx_;
  const FeatureLayer& layer_;
  Model& model_;
  ShardedInput input_;
  Update& update_;
  Chief* chief_;
  Progress progress_;
  TrainResult result_;
  InputPosition position_;  // after the last step's batch
  // After the last step whose update is known to be in the variables
  // (Update::AppliedOnReturn): what on_step reports.
  InputPosition reported_;
  int64_t last_epoch_;
  int64_t steps_ = 0;
  const int64_t freeze_at_;
  InputTrace trace_;
  ModelInputs device_inputs_;
  kernels::Tensor logits_, dlogits_;
  std::vector<Gradient> grads_;
};

TrainState TrainLoop::State() const {
  TrainState state;
  state.global_step = update_.global_step();
  if (o_.record_position) state.position = position_;
  return state;
}

// Cancelled; the chief writes its checkpoint first, so that the run can
// resume.
Status TrainLoop::Cancelled() {
  return Stopped(absl::StatusCode::kCancelled, "");
}

Status TrainLoop::UpdateFailed(const Status& st) {
  if (!update_.collective()) {
    // Stopping, the task's stop flag cut the call in flight short.
    return CutShort(st) ? Cancelled() : st;
  }
  // Stopping, this rank's wait was cut short or a peer stopped first.
  if (hooks_.cancelled()) return Cancelled();
  return Stopped(st.code(), Message(st));
}

Status TrainLoop::Stopped(absl::StatusCode code, std::string_view why) {
  const int64_t step = update_.global_step();
  std::string text = o_.name.empty()
                         ? StrCat("training cancelled at step ", step)
                         : StrCat(o_.name, ": stopped at step ", step);
  if (!why.empty()) text = StrCat(text, ": ", why);
  // A worker that leaves tells the parameter servers, so that the sync
  // steps of the others (stopping too) do not wait for it until
  // heartbeat_timeout. Best effort: they may be gone.
  if (!o_.name.empty() && update_.independent_workers()) {
    if (Status st = update_.Done(); !st.ok()) {
      hooks_.Note(StrCat(
          text, "; could not tell the parameter servers: ", Message(st)));
    }
  }
  if (chief_ == nullptr) return Status(code, text);
  if (!update_.consistent()) {
    return Status(code, StrCat(text,
                               "; no checkpoint: the failed step left the "
                               "variables part-way through its update"));
  }
  if (Status st = chief_->WriteCheckpoint(update_, State()); !st.ok()) {
    return Status(code, StrCat(text, "; no checkpoint: ", Message(st)));
  }
  return Status(code, StrCat(text, "; checkpoint ", chief_->checkpoint_path()));
}

StatusOr<TrainResult> TrainLoop::Run() {
  result_.num_parameters = model_.num_parameters();
  DTF_ASSIGN_OR_RETURN(const bool cancelled, Steps());
  if (cancelled) return Cancelled();
  const int64_t step = update_.global_step();
  progress_.Report(step, last_epoch_);
  result_.steps = step;
  result_.loss =
      o_.loss_of_last_epoch ? progress_.epoch_loss() : progress_.loss();
  result_.examples = progress_.examples();
  result_.train_seconds = progress_.train_seconds();
  result_.examples_per_sec = progress_.examples_per_sec();
  DTF_RETURN_IF_ERROR(update_.Done());
  if (chief_ == nullptr) return std::move(result_);
  return Finish();
}

StatusOr<bool> TrainLoop::Steps() {
  // With prefetching, batches are transformed on the queue's thread with a
  // context of their own.
  const kernels::Context prefetch_ctx = kernels::Context::Cpu(1);
  const kernels::Context& transform_ctx =
      update_.prefetch() ? prefetch_ctx : HostContext(ctx_);
  BatchQueue batches(
      ctx_,
      [&](PreparedBatch* p) {
        StatusOr<bool> more = input_.Next(&p->batch, &p->shard, &p->position);
        p->status = more.status();
        p->more = more.ok() && *more;
        if (!p->more) return;
        p->status = layer_.Transform(transform_ctx, p->batch, true, &p->inputs);
        if (p->status.ok()) update_.PrepareInputs(p);
      },
      update_.prefetch());
  if (Status st = update_.Start(); !st.ok()) return UpdateFailed(st);
  DTF_ASSIGN_OR_RETURN(PreparedBatch * cur, batches.First());
  // The chief's early stopping, which a collective update carries to every
  // rank in the next agreement.
  bool stop_early = false;
  trace_.Start(update_.global_step(), position_);
  if (hooks_.on_step) {
    hooks_.on_step(steps_, update_.global_step(), reported_);
  }
  while (true) {
    if (steps_ == freeze_at_) {
      while (true) std::this_thread::sleep_for(std::chrono::hours(1));
    }
    const bool collective = update_.collective();
    if (!collective && hooks_.cancelled()) return true;
    const int64_t step = update_.global_step();
    if (o_.max_steps > 0 && step >= o_.max_steps) return false;
    // The chief stopped training early: end as when the data runs out.
    if (o_.end_training != nullptr && o_.end_training->load()) {
      hooks_.Note(
          StrCat(o_.name, ": the chief stopped training at step ", step));
      return false;
    }
    if (!cur->more && !collective && chief_ != nullptr && !hooks_.cancelled() &&
        !stop_early) {
      // The chief's input has ended: it stays to read a shard handed on
      // from a worker taken for dead while others train. The parameter
      // servers' sync steps do not wait for it meanwhile (a push of it
      // counts it in again).
      if (Status st = update_.Done(); !st.ok()) {
        hooks_.Note(StrCat(o_.name,
                           ": could not tell the parameter servers "
                           "its input ended: ",
                           Message(st)));
      }
      if (chief_->AwaitInput(o_.name, update_,
                             [&] { return input_.HasNew(); })) {
        DTF_ASSIGN_OR_RETURN(cur, batches.First());
        continue;
      }
    }
    // A rank whose input ended joins the others' steps while one of them
    // reads on (Update::joins_idle).
    const Agreement mine = hooks_.cancelled() ? Agreement::kCancel
                           : stop_early       ? Agreement::kEnd
                           : cur->more        ? Agreement::kStep
                           : collective && update_.joins_idle()
                               ? Agreement::kIdle
                               : Agreement::kEnd;
    if (!update_.votes_in_apply() || mine != Agreement::kStep) {
      StatusOr<Agreement> agreed =
          update_.votes_in_apply() ? update_.Vote(mine) : update_.Agree(mine);
      if (!agreed.ok()) return UpdateFailed(agreed.status());
      if (*agreed != Agreement::kStep) return *agreed == Agreement::kCancel;
    }
    if (mine == Agreement::kIdle) {
      // The step was joined and applied in Vote.
      ++steps_;
    } else {
      DTF_RETURN_IF_ERROR(Step(cur, batches));
    }
    // A vote in Apply: another rank ended the loop, the step not applied.
    if (const Agreement agreed = update_.Agreed(); agreed != Agreement::kStep) {
      return agreed == Agreement::kCancel;
    }
    if (hooks_.on_step) {
      hooks_.on_step(steps_, update_.global_step(), reported_);
    }
    DTF_ASSIGN_OR_RETURN(const bool stop, AfterStep());
    if (!stop) continue;
    hooks_.Note(chief_->tracker().StopNote(update_.global_step()));
    if (collective) {
      stop_early = true;
      continue;
    }
    // The other workers hear it with their next heartbeat and end as when
    // their data runs out.
    if (chief_->coordinator() != nullptr) chief_->coordinator()->StopTraining();
    return false;
  }
}

Status TrainLoop::Step(PreparedBatch*& cur, BatchQueue& batches) {
  const auto t0 = Clock::now();
  if (Status st = update_.Pull(*cur); !st.ok()) return UpdateFailed(st);
  const auto pulled = Clock::now();
  DTF_ASSIGN_OR_RETURN(const ModelInputs* staged,
                       StageInputs(ctx_, cur->inputs, &device_inputs_));
  const ModelInputs& inputs = *staged;
  DTF_RETURN_IF_ERROR(model_.Forward(ctx_, inputs, true, &logits_));
  DTF_ASSIGN_OR_RETURN(const float loss,
                       ComputeLoss(ctx_, o_.loss, logits_, inputs, &dlogits_));
  Model::GradientReady ready;
  if (update_.overlaps()) {
    ready = [&](size_t v) { return update_.GradientReady(v, *cur, &grads_); };
  }
  DTF_RETURN_IF_ERROR(model_.Backward(ctx_, inputs, dlogits_, &grads_, ready));
  const auto computed = Clock::now();
  DTF_ASSIGN_OR_RETURN(const PreparedBatch* next, batches.Next());
  const auto read = Clock::now();
  trace_.Step(update_.global_step(), cur->shard, cur->position, cur->batch);
  if (Status st = update_.Apply(*cur, loss, &grads_, *next); !st.ok()) {
    return UpdateFailed(st);
  }
  StepTimes& times = result_.step_times;
  times.pull += Seconds(pulled - t0);
  times.compute += Seconds(computed - pulled);
  times.input += Seconds(read - computed);
  times.update += Seconds(Clock::now() - read);
  ++result_.steps_run;
  if (update_.Agreed() != Agreement::kStep) return OkStatus();
  const int64_t rows = cur->batch.rows;
  // The worker's own shard's position: a batch of a shard handed on to it
  // is committed for that shard alone (ShardedInput).
  if (cur->shard < 0) position_ = cur->position;
  if (update_.AppliedOnReturn(*next)) reported_ = position_;
  cur = batches.Advance();
  progress_.AddStep(rows, loss, Clock::now() - t0);
  ++steps_;
  return OkStatus();
}

StatusOr<bool> TrainLoop::AfterStep() {
  const int64_t at = o_.first_step + steps_;
  const int64_t step = update_.global_step();
  if (o_.log_every_steps > 0 && at % o_.log_every_steps == 0) {
    progress_.Report(step, position_.epoch);
  }
  const bool epoch_done = position_.epoch != last_epoch_;
  if (epoch_done) {
    last_epoch_ = position_.epoch;
    progress_.EndEpoch();
    if (o_.log_every_steps == 0) progress_.Report(step, last_epoch_);
  }
  if (chief_ == nullptr) return false;
  chief_->HandOnInput(update_);
  bool stop = false;
  if (o_.evaluate &&
      (o_.eval_every_steps > 0 ? at % o_.eval_every_steps == 0 : epoch_done)) {
    StatusOr<bool> evaluated =
        chief_->Evaluate(update_, progress_, State(), &result_);
    if (CutShort(evaluated.status())) {
      // A collective update's ranks agree to stop before the next step.
      if (!update_.collective()) return Cancelled();
    } else {
      DTF_RETURN_IF_ERROR(evaluated.status());
      stop = *evaluated;
    }
  }
  if (o_.checkpoint_every_steps > 0 && at % o_.checkpoint_every_steps == 0) {
    Status written = chief_->WriteCheckpoint(update_, State());
    // Cut short by a cancel: written again as the loop stops.
    if (CutShort(written) && !update_.collective()) return Cancelled();
    DTF_RETURN_IF_ERROR(written);
  }
  return stop;
}

StatusOr<TrainResult> TrainLoop::Finish() {
  const int64_t step = update_.global_step();
  chief_->Done(o_.name, step, result_);
  if (update_.independent_workers()) {
    Status waited = chief_->WaitForWorkers(o_.name, update_);
    if (waited.code() == absl::StatusCode::kCancelled) return Cancelled();
    DTF_RETURN_IF_ERROR(waited);
  }
  chief_->SetRunState(RunState::kEvaluating, step);
  // The model changed since the last evaluation: by this worker's steps,
  // or by the other workers'.
  if (o_.evaluate &&
      (update_.independent_workers() || chief_->last_eval_step() != step)) {
    StatusOr<bool> evaluated =
        chief_->Evaluate(update_, progress_, State(), &result_);
    if (CutShort(evaluated.status())) return Cancelled();
    DTF_RETURN_IF_ERROR(evaluated.status());
  }
  DTF_RETURN_IF_ERROR(chief_->Finish(update_, State(), &result_));
  DTF_RETURN_IF_ERROR(update_.EndRun());
  return std::move(result_);
}

}  // namespace

StatusOr<TrainResult> RunTrainLoop(const TrainLoopOptions& options,
                                   const TrainHooks& hooks,
                                   const TrainLoopParts& parts) {
  return TrainLoop(options, hooks, parts).Run();
}

}  // namespace dtf::runtime
