// How a training step's gradients reach the variables — the part in which
// the training loop (train_loop.h) of one process, of a parameter-server
// worker and of an allreduce worker differ. One strategy a file:
// update_local.cc (the variables in this process), update_ps.cc (on the
// parameter servers), update_allreduce.cc (a replica on every worker, the
// gradients averaged over NCCL or Gloo).
//
// The loop calls, for each step: Pull (the variables the batch reads in
// place), Agree (whether every rank still has a batch; or a vote inside
// Apply), the forward and backward pass, then Apply; and WithDeviceModel /
// WithHostModel when the chief evaluates, checkpoints or exports the whole
// model.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/data/input_position.h"
#include "lib/data/job_file.h"
#include "lib/kernels/context.h"
#include "lib/kernels/optimizer.h"
#include "lib/runtime/checkpoint/shard_writer.h"
#include "lib/runtime/model/model.h"
#include "lib/runtime/model/optimizers.h"
#include "lib/runtime/train/batch_queue.h"
#include "lib/runtime/train/evaluator.h"
#include "lib/runtime/train/train_hooks.h"
#include "lib/runtime/train/worker_options.h"

namespace dtf::runtime {

// What the ranks agree on before a step; the first that holds for some
// rank wins: one was cancelled, one has no batch (or the chief's early
// stopping ended training), every one has a batch. kIdle, a rank whose
// input has ended while others' may not have (where the update takes it:
// Update::joins_idle), lets the others step: it joins their step without
// gradients; when every rank votes it the ranks agree on kEnd.
enum class Agreement { kCancel = 0, kEnd = 1, kStep = 2, kIdle = 3 };

class Update {
 public:
  using HostUse = std::function<Status(
      Model* model, const std::vector<kernels::OptimizerState>& states)>;

  virtual ~Update() = default;

  // Batches are read and transformed on a thread of their own while a step
  // computes.
  virtual bool prefetch() const { return false; }
  // The ranks agree before every step: a cancel or the chief's early stop
  // reaches every rank through the next agreement instead of ending one
  // rank's loop at once.
  virtual bool collective() const { return false; }
  // Other workers change the variables on their own schedule: the chief
  // waits for them to finish and always evaluates the model they left.
  virtual bool independent_workers() const { return false; }

  // Called once before the first step: learns the global step the run is
  // at where the variables are elsewhere (parameter servers restored from
  // a checkpoint, or a run this worker joins late), so that a run already
  // at train.steps takes no step more.
  virtual Status Start() { return OkStatus(); }
  // The global step the variables are at.
  virtual int64_t global_step() const = 0;
  // Whether every variable is at global_step(): false once an Apply failed
  // part-way (a collective aborted after some variables changed), when the
  // variables are no model to checkpoint.
  virtual bool consistent() const { return true; }
  // Variables kept on parameter servers: the global step of each PS as the
  // last WithHostModel pulled them (with slots: every shard at one step
  // where the mode allows it); empty otherwise.
  virtual std::vector<int64_t> shard_steps() const { return {}; }
  // Variables kept on parameter servers: each PS can write its own shard
  // of a sharded checkpoint (SaveShards).
  virtual bool sharded() const { return false; }
  // REQUIRES: sharded(). Has PS p write shard p of the sharded checkpoint
  // at `prefix` (num_shards(): every PS's and the chief's, last), every
  // shard at one global step where the mode allows it (as WithHostModel
  // with slots), and returns each one's index entries; shard_steps() is
  // then the step of each. With `variables_only`, each PS writes its
  // variables alone under their own names (SaveShardRequest): a
  // SavedModel's variables/ bundle or a best model.
  virtual int num_shards() const { return 0; }
  // REQUIRES: sharded(). The model whose specs() name every variable with
  // its whole shape, whatever rows its values hold (what the SavedModel's
  // graph is built from); owned by the update.
  virtual const Model* layout() const { return nullptr; }
  virtual StatusOr<std::vector<ShardedIndexEntries>> SaveShards(
      const std::string& prefix, bool variables_only) {
    (void)prefix;
    (void)variables_only;
    return FailedPreconditionError("no variables on parameter servers");
  }
  // Whether the update knows each worker's committed input position
  // (committed_positions): the position after the last of its batches
  // whose gradients the variables hold, or that were dropped as stale.
  virtual bool commits_positions() const { return false; }
  // REQUIRES: commits_positions(). Worker i's committed input position at
  // index i (nullopt: none known yet) for the variables the last
  // WithHostModel with slots or SaveShards handed out (parameter servers:
  // each push carries its batch's position, which every PS commits with
  // the gradients), or after the last step (allreduce: every rank's
  // position rides on the step's collective).
  virtual std::vector<std::optional<InputPosition>> committed_positions()
      const {
    return {};
  }
  // REQUIRES: commits_positions(). The committed input positions as they
  // stand now (parameter servers: asked for them), for handing a shard on
  // (Chief::HandOnInput); checkpoints keep taking committed_positions().
  virtual StatusOr<std::vector<std::optional<InputPosition>>>
  FetchCommittedPositions() {
    return committed_positions();
  }
  // The update's own preparation of a transformed batch, where the batch
  // was read (with prefetching, on the queue's thread).
  virtual void PrepareInputs(PreparedBatch* batch) { (void)batch; }
  // Before the step on `batch`: the variables it reads, in place.
  virtual Status Pull(const PreparedBatch& batch) = 0;
  // Whether every rank has a batch; `mine` is this rank's answer. A
  // collective update fails it (and Apply) with the collective's error when
  // a peer is lost, hangs past its timeout or the run is cancelled while it
  // waits.
  virtual StatusOr<Agreement> Agree(Agreement mine) { return mine; }
  // The agreement rides on the step's own collective instead (one
  // collective a step, not two): the loop makes no Agree. A rank voting
  // kStep runs its step, and Apply applies the gradients only when every
  // rank voted kStep — Agreed() then says what the ranks agreed on. A rank
  // voting otherwise calls Vote, which joins that collective without
  // gradients and returns the agreement (kStep only for kIdle:
  // joins_idle).
  virtual bool votes_in_apply() const { return false; }
  // A rank whose input ended may vote kIdle (in Vote): when another rank
  // has a batch, Vote returns kStep having joined that step without
  // gradients (the average is over the ranks with a batch) and applied
  // its update, so that the others read their input to its end.
  virtual bool joins_idle() const { return false; }
  virtual StatusOr<Agreement> Vote(Agreement mine) { return mine; }
  virtual Agreement Agreed() const { return Agreement::kStep; }
  // Whether the update starts sending a step's gradients during the
  // backward pass: the loop then calls GradientReady(v, batch, grads) as
  // soon as variable v's gradient in *grads is final (Model::Backward's
  // `ready`), `batch` being the step's, and Apply with the same `grads`
  // afterwards. The gradients the update took already are not changed
  // until Apply returns.
  virtual bool overlaps() const { return false; }
  virtual Status GradientReady(size_t variable, const PreparedBatch& batch,
                               std::vector<Gradient>* grads) {
    (void)variable;
    (void)batch;
    (void)grads;
    return OkStatus();
  }
  // Applies the step's gradients `grads` (of `batch`, at mean loss `loss`);
  // `next` is the batch after it (next.more: there is one).
  virtual Status Apply(const PreparedBatch& batch, float loss,
                       std::vector<Gradient>* grads,
                       const PreparedBatch& next) = 0;
  // Whether an Apply that returned OK with `next` after its batch left the
  // step's gradients in the variables (or dropped them as stale) — rather
  // than queued for a step still to come. The input position a worker
  // reports to the chief counts only such steps.
  virtual bool AppliedOnReturn(const PreparedBatch& next) const {
    (void)next;
    return true;
  }

  // Runs `use` with every variable whole, on the compute device.
  virtual Status WithDeviceModel(const std::function<Status(Model&)>& use) = 0;
  // Runs `use` with the model an evaluation computes on and, where the
  // model holds only what each batch reads (variables on parameter
  // servers), the EvalPrepare that pulls a batch's rows before it is
  // evaluated; else with every variable whole (WithDeviceModel) and no
  // prepare.
  virtual Status WithEvalModel(
      const std::function<Status(Model&, const EvalPrepare&)>& use) {
    return WithDeviceModel([&](Model& model) { return use(model, nullptr); });
  }
  // Runs `use` with every variable whole on the host and, with `slots`,
  // every optimizer state (else `states` may be empty).
  virtual Status WithHostModel(bool slots, const HostUse& use) = 0;

  // This worker's training ended (data out, steps done, early stopping).
  virtual Status Done() { return OkStatus(); }
  // The chief ended the run.
  virtual Status EndRun() { return OkStatus(); }
};

// The variables in this process (one-process training): optimizer
// `states` parallel to model->variables(), both moved to ctx's memory;
// `global_step`: the step they are at.
std::unique_ptr<Update> MakeLocalUpdate(
    const kernels::Context& ctx, Model* model, Optimizers optimizers,
    std::vector<kernels::OptimizerState> states, int64_t global_step);

// The variables on the parameter servers options.ps. `model` holds the
// compact copy a step computes on.
StatusOr<std::unique_ptr<Update>> MakePsUpdate(const kernels::Context& ctx,
                                               const TrainSpec& train,
                                               const WorkerOptions& options,
                                               const TrainHooks& hooks,
                                               Model* model);

// A replica on this device, joined to the other workers' (NCCL on a GPU,
// Gloo on the CPU) as rank layout.rank of layout.size (allreduce_layout.h)
// and started from worker 0's values. With options.resume, worker 0 first
// restores the run's checkpoint into `layer`, `model` and the optimizer
// states (allreduce_restore.h), and every rank gets its variables, slots,
// update counts and global step, and *resumed what it sent.
struct AllreduceLayout;
struct AllreduceResume;
class FeatureLayer;
StatusOr<std::unique_ptr<Update>> MakeAllreduceUpdate(
    const kernels::Context& ctx, const JobFile& job,
    const WorkerOptions& options, const AllreduceLayout& layout,
    const TrainHooks& hooks, FeatureLayer* layer, Model* model,
    AllreduceResume* resumed);

}  // namespace dtf::runtime
