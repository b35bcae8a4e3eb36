// The update of a parameter-server worker (train.mode sync, async, bounded
// staleness, backup workers: the parameter servers decide). Each step pulls
// the dense variables and only the embedding / wide-weight rows its batch
// touches, computes the gradients on a compact copy, and pushes them; one
// Step call per PS pushes step k's gradients and pulls the rows batch k+1
// touches, while the next batch is read on the prefetch thread. A PS that
// goes away or does not answer in time (Unavailable, DeadlineExceeded) is
// waited for at every call, within train.coordinator_timeout (it may be
// restarted from the last checkpoint). The task's stop flag cuts a call in
// flight short (Cancelled).
#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "lib/base/strings.h"
#include "lib/base/task_name.h"
#include "lib/runtime/model/device.h"
#include "lib/runtime/ps/ps_client.h"
#include "lib/runtime/ps/ps_requests.h"
#include "lib/runtime/train/update.h"

namespace dtf::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// A copy of `in` that Compact may rewrite (an evaluation's batches may be
// cached for the next evaluation).
ModelInputs CopyInputs(const ModelInputs& in) {
  ModelInputs out;
  out.rows = in.rows;
  out.deep_dense = in.deep_dense.Clone();
  out.wide_dense = in.wide_dense.Clone();
  out.labels = in.labels.Clone();
  out.class_labels = in.class_labels.Clone();
  for (const kernels::SparseIds& s : in.ids) {
    kernels::SparseIds c;
    c.ids = s.ids.Clone();
    c.row_splits = s.row_splits.Clone();
    c.weights = s.weights.Clone();
    out.ids.push_back(std::move(c));
  }
  return out;
}

class PsUpdate : public Update {
 public:
  PsUpdate(const kernels::Context& ctx, const TrainSpec& train,
           const WorkerOptions& options, const TrainHooks& hooks, Model* model,
           Optimizers optimizers)
      : ctx_(ctx),
        train_(train),
        hooks_(hooks),
        self_(TaskName{Role::kWorker, options.index}.ToString()),
        model_(model),
        optimizers_(std::move(optimizers)),
        full_shapes_(VariableShapes(*model)),
        ps_(options.ps, options.credentials, options.index,
            std::chrono::seconds(train.ps_timeout), hooks.cancel) {}

  bool prefetch() const override { return true; }
  bool independent_workers() const override { return true; }
  Status Start() override {
    DTF_RETURN_IF_ERROR(Retrying([&] { return ps_.Pull({}, {}, 0); }));
    for (const int64_t step : ps_.steps()) {
      global_step_ = std::max(global_step_, step);
    }
    return OkStatus();
  }
  int64_t global_step() const override { return global_step_; }
  std::vector<int64_t> shard_steps() const override { return ps_.steps(); }
  bool sharded() const override { return true; }
  int num_shards() const override { return ps_.num_ps() + 1; }
  bool commits_positions() const override { return true; }
  std::vector<std::optional<InputPosition>> committed_positions()
      const override {
    return ps_.positions();
  }
  StatusOr<std::vector<std::optional<InputPosition>>> FetchCommittedPositions()
      override {
    // A pull of no variable: the positions alone.
    DTF_RETURN_IF_ERROR(ps_.Pull({}, {}, 0, /*slots=*/true));
    return ps_.positions();
  }
  const Model* layout() const override { return model_; }

  StatusOr<std::vector<ShardedIndexEntries>> SaveShards(
      const std::string& prefix, bool variables_only) override {
    // Sync mode: every shard at the highest step a PS reached (as
    // PullConsistentCut); async mode has no common step.
    int64_t target = 0;
    if (train_.mode == TrainMode::kSync) {
      DTF_RETURN_IF_ERROR(Retrying([&] { return ps_.Pull({}, {}, 0); }));
      for (const int64_t step : ps_.steps()) target = std::max(target, step);
    }
    std::vector<rpc::SaveShardResponse> saved;
    DTF_RETURN_IF_ERROR(Retrying([&]() -> Status {
      DTF_ASSIGN_OR_RETURN(
          saved, ps_.SaveShards(prefix, num_shards(), target,
                                std::chrono::seconds(std::max<int64_t>(
                                    train_.coordinator_timeout, 60)),
                                variables_only));
      return OkStatus();
    }));
    std::vector<ShardedIndexEntries> shards(saved.size());
    for (size_t p = 0; p < saved.size(); ++p) {
      for (auto& e : *saved[p].mutable_entries()) {
        shards[p].emplace_back(std::move(*e.mutable_key()),
                               std::move(*e.mutable_entry()));
      }
    }
    return shards;
  }

  void PrepareInputs(PreparedBatch* batch) override {
    Compact(&batch->inputs, &batch->unique);
  }

  Status Pull(const PreparedBatch& batch) override {
    if (need_pull_) {
      PullRequests(*model_, &batch.unique, &dense_, &sparse_, full_shapes_);
      DTF_RETURN_IF_ERROR(PullWaiting(/*slots=*/false));
      need_pull_ = false;
    }
    auto& vars = model_->variables();
    before_.resize(vars.size());
    for (size_t v = 0; v < vars.size(); ++v) {
      if (!vars[v].trainable) before_[v] = vars[v].value.Clone();
    }
    return mirror_.ToDevice(ctx_, model_);
  }

  Status Apply(const PreparedBatch& batch, float loss,
               std::vector<Gradient>* grads,
               const PreparedBatch& next) override {
    DTF_ASSIGN_OR_RETURN(const std::vector<Gradient>* step_grads,
                         mirror_.ToHost(ctx_, model_, grads, &host_grads_));
    std::vector<std::vector<rpc::TensorPiece>> pieces = GradientPieces(
        ps_, *model_, *step_grads, before_, batch.unique, full_shapes_);
    if (next.more) {
      PullRequests(*model_, &next.unique, &dense_, &sparse_, full_shapes_);
    }
    StatusOr<PsClient::PushResult> pushed =
        ps_.Step(std::move(pieces), batch.batch.rows, loss,
                 next.more ? &dense_ : nullptr, next.more ? &sparse_ : nullptr,
                 train_.mode == TrainMode::kSync, batch.position, batch.shard);
    if (pushed.ok()) {
      global_step_ = pushed->global_step;
      return OkStatus();
    }
    if (!Transient(pushed.status())) return pushed.status();
    // A parameter server went away (and may be restarted from the last
    // checkpoint) or did not answer in time: this step's gradients may be
    // lost (never applied twice: nothing is pushed again); pull again once
    // every PS answers.
    return Rejoin(pushed.status(), next.more, RetryDeadline());
  }

  // Every row of every variable pulled (the next step pulls its batch's
  // rows again).
  Status WithDeviceModel(const std::function<Status(Model&)>& use) override {
    PullRequests(*model_, nullptr, &dense_, &sparse_, full_shapes_);
    need_pull_ = true;
    DTF_RETURN_IF_ERROR(PullWaiting(/*slots=*/false));
    DTF_RETURN_IF_ERROR(mirror_.ToDevice(ctx_, model_));
    Status used = use(*model_);
    DTF_RETURN_IF_ERROR(
        mirror_.ToHost(ctx_, model_, nullptr, nullptr).status());
    return used;
  }

  // Each evaluation batch as a step's: compacted, its rows pulled (the
  // next step pulls its batch's rows again). Never the whole tables.
  Status WithEvalModel(
      const std::function<Status(Model&, const EvalPrepare&)>& use) override {
    need_pull_ = true;
    ModelInputs compact;
    std::vector<std::vector<int64_t>> unique;
    const EvalPrepare prepare =
        [&](const ModelInputs& host) -> StatusOr<const ModelInputs*> {
      compact = CopyInputs(host);
      Compact(&compact, &unique);
      PullRequests(*model_, &unique, &dense_, &sparse_, full_shapes_);
      DTF_RETURN_IF_ERROR(PullWaiting(/*slots=*/false));
      DTF_RETURN_IF_ERROR(mirror_.ToDevice(ctx_, model_));
      return &compact;
    };
    Status used = use(*model_, prepare);
    DTF_RETURN_IF_ERROR(
        mirror_.ToHost(ctx_, model_, nullptr, nullptr).status());
    return used;
  }

  Status WithHostModel(bool slots, const HostUse& use) override {
    std::vector<kernels::OptimizerState> states;
    if (slots) states = NewOptimizerStates(optimizers_, *model_, full_shapes_);
    PullRequests(*model_, nullptr, &dense_, &sparse_, full_shapes_,
                 slots ? &states : nullptr);
    need_pull_ = true;
    DTF_RETURN_IF_ERROR(PullWaiting(slots));
    if (slots) DTF_RETURN_IF_ERROR(PullConsistentCut());
    return use(model_, states);
  }

  // Sync mode: a step's Step call waits (with the next batch's pull) until
  // every PS applied the step; the last step of this worker's data pulls
  // nothing, and its gradients may still wait for the step's other pushes.
  // Async mode: every PS applied the push before it answered.
  bool AppliedOnReturn(const PreparedBatch& next) const override {
    return next.more || train_.mode != TrainMode::kSync;
  }

  Status Done() override {
    return Retrying([&] { return ps_.WorkerDone(); });
  }
  Status EndRun() override { return ps_.Shutdown("the run finished"); }

 private:
  // A PS call's failure that waiting may cure: the PS is gone (and may be
  // restarted) or did not answer in time.
  static bool Transient(const Status& st) {
    return st.code() == absl::StatusCode::kUnavailable ||
           st.code() == absl::StatusCode::kDeadlineExceeded;
  }
  Clock::time_point RetryDeadline() const {
    return Clock::now() + std::chrono::seconds(train_.coordinator_timeout);
  }

  // `call` (a PS call that may be made again), made again after each
  // transient failure once every PS answers (Rejoin), until
  // coordinator_timeout has passed.
  Status Retrying(const std::function<Status()>& call) {
    const Clock::time_point deadline = RetryDeadline();
    while (true) {
      Status st = call();
      if (!Transient(st) || Clock::now() >= deadline) return st;
      DTF_RETURN_IF_ERROR(Rejoin(st, /*pull=*/false, deadline));
    }
  }

  // After a failed call: pulls (the rows of the next batch, when `pull`)
  // until every PS answers, until `deadline`.
  Status Rejoin(const Status& why, bool pull, Clock::time_point deadline) {
    hooks_.Note(
        StrCat(Message(why), "; waiting up to ",
               std::chrono::ceil<std::chrono::seconds>(deadline - Clock::now())
                   .count(),
               " s for it"));
    while (true) {
      if (hooks_.cancelled()) {
        return CancelledError(
            StrCat(self_, ": stopped at step ", global_step_));
      }
      // Each try ends by the deadline, however long a call may take.
      ps_.NotAfter(deadline);
      Status st = pull ? ps_.Pull(dense_, sparse_, 0) : ps_.Pull({}, {}, 0);
      ps_.NotAfter(Clock::time_point::max());
      if (st.ok()) break;
      if (!Transient(st)) return st;
      if (Clock::now() >= deadline) {
        return Annotate(st,
                        StrCat("no answer within train.coordinator_timeout (",
                               train_.coordinator_timeout, " s)"));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    global_step_ = *std::max_element(ps_.steps().begin(), ps_.steps().end());
    hooks_.Note(StrCat("every parameter server answers again; global step ",
                       global_step_));
    return OkStatus();
  }

  // Sync mode: a step the other workers pushed may have been applied on
  // one PS and not yet on another when they were pulled. Pulls again from
  // every PS once each reached the highest step seen (it will: the step
  // only waits for pushes in flight), so that every shard of a checkpoint
  // is of one global step. A few rounds at most; the steps are recorded as
  // they are (ps_steps) either way. Async mode has no common step: each
  // shard is recorded with its own.
  Status PullConsistentCut() {
    if (train_.mode != TrainMode::kSync) return OkStatus();
    for (int round = 0; round < 3; ++round) {
      const std::vector<int64_t>& steps = ps_.steps();
      if (steps.empty()) return OkStatus();
      const auto [lo, hi] = std::minmax_element(steps.begin(), steps.end());
      if (*lo == *hi) return OkStatus();
      const int64_t target = *hi;
      DTF_RETURN_IF_ERROR(Retrying(
          [&] { return ps_.Pull(dense_, sparse_, target, /*slots=*/true); }));
    }
    return OkStatus();
  }

  // Pulls what dense_ and sparse_ ask for (with optimizer slots when
  // `slots`); a PS that went away is waited for (Rejoin) and asked again.
  Status PullWaiting(bool slots) {
    return Retrying([&] { return ps_.Pull(dense_, sparse_, 0, slots); });
  }

  const kernels::Context& ctx_;
  const TrainSpec& train_;
  const TrainHooks& hooks_;
  const std::string self_;
  Model* model_;
  const Optimizers optimizers_;
  const std::vector<std::vector<int64_t>> full_shapes_;
  PsClient ps_;
  DeviceMirror mirror_;
  int64_t global_step_ = 0;
  // The model holds no batch's rows (at the start, after a whole pull).
  bool need_pull_ = true;
  std::vector<PsClient::DenseVar> dense_;
  std::vector<PsClient::SparseVar> sparse_;
  std::vector<kernels::Tensor> before_;  // untrainable values as pulled
  std::vector<Gradient> host_grads_;
};

}  // namespace

StatusOr<std::unique_ptr<Update>> MakePsUpdate(const kernels::Context& ctx,
                                               const TrainSpec& train,
                                               const WorkerOptions& options,
                                               const TrainHooks& hooks,
                                               Model* model) {
  DTF_ASSIGN_OR_RETURN(Optimizers optimizers, MakeOptimizers(train));
  return std::unique_ptr<Update>(std::make_unique<PsUpdate>(
      ctx, train, options, hooks, model, std::move(optimizers)));
}

}  // namespace dtf::runtime
