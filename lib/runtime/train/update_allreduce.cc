// The update of an allreduce run: every worker holds a replica of the whole
// model on its device; each step's gradients are averaged with every other
// worker's through the collective (lib/kernels/collective.h: NCCL between
// GPUs, Gloo between CPU processes) and the same optimizer
// update is applied everywhere, so the replicas stay equal. Sparse
// gradients are densified for the average (Horovod's sparse_as_dense).
// The gradients travel in buckets (gradient_buckets.h); on the CPU, with
// train.overlap_communication, each bucket's average starts on a
// communication thread as soon as the backward pass has finished its
// variables, and the step waits for the last one before it applies them.
// A peer lost or hung fails the collective under way within
// train.collective_timeout (collective.h) and so the step, on every rank.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/host_name.h"
#include "lib/base/strings.h"
#include "lib/base/task_name.h"
#include "lib/kernels/collective.h"
#include "lib/kernels/fuse.h"
#include "lib/kernels/gloo.h"
#include "lib/kernels/nccl.h"
#include "lib/rpc/tls_certs.h"
#include "lib/runtime/cluster/coordinator_service.h"
#include "lib/runtime/cluster/coordinator_store.h"
#include "lib/runtime/train/allreduce_layout.h"
#include "lib/runtime/train/allreduce_restore.h"
#include "lib/runtime/train/gradient_buckets.h"
#include "lib/runtime/train/tls_ring.h"
#include "lib/runtime/train/update.h"
#include "lib/runtime/train/update_replica.h"

namespace dtf::runtime {
namespace {

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

// The vote a step's first gradient bucket carries ahead of the gradients
// on the CPU (Update::votes_in_apply): one slot per Agreement value, 1 where
// the rank votes; after the average a slot is above 0 when some rank voted
// for it. A cancel wins, then an end; else the ranks step when one has a
// batch (those whose input ended join the step without gradients), and end
// when none has.
constexpr int64_t kVoteSlots = 4;

void WriteVote(Agreement mine, float* slots) {
  for (int64_t a = 0; a < kVoteSlots; ++a) {
    slots[a] = a == int64_t(mine) ? 1.0f : 0.0f;
  }
}

Agreement ReadVote(const float* slots) {
  for (const Agreement a :
       {Agreement::kCancel, Agreement::kEnd, Agreement::kStep}) {
    if (slots[int64_t(a)] > 0.0f) return a;
  }
  // Every rank's input ended; no vote arrived at all: nothing to agree on.
  return slots[int64_t(Agreement::kIdle)] > 0.0f ? Agreement::kEnd
                                                 : Agreement::kCancel;
}

// The input position of the shard each rank's step read (its own, or one
// of the shards dealt to it: allreduce_layout.h) rides behind the vote
// (Update::committed_positions): kPositionSlots floats an input shard, its
// five numbers in 16-bit pieces (kPieces a number: up to 2^48; each number
// plus one, so that an unknown count, -1, travels as 0), zeros in every
// shard's slots no rank read this step; the average times the number of
// ranks gives each piece back exactly (a float holds 24 bits).
constexpr int64_t kPieces = 3;
constexpr int64_t kNumbers = int64_t(kInputPositionNumbers);
constexpr int64_t kPositionSlots = kNumbers * kPieces;

void WritePosition(const InputPosition& p, int shard, float* slots) {
  float* mine = slots + int64_t(shard) * kPositionSlots;
  const auto values = PositionNumbers(p);
  for (int64_t f = 0; f < kNumbers; ++f) {
    for (int64_t k = 0; k < kPieces; ++k) {
      mine[f * kPieces + k] = float(((values[f] + 1) >> (16 * k)) & 0xffff);
    }
  }
}

// Shard `shard`'s position; nullopt when no rank read it this step.
std::optional<InputPosition> ReadPosition(const float* slots, int shard,
                                          int ranks) {
  const float* theirs = slots + int64_t(shard) * kPositionSlots;
  if (std::all_of(theirs, theirs + kPositionSlots,
                  [](float f) { return f == 0.0f; })) {
    return std::nullopt;
  }
  std::array<int64_t, kInputPositionNumbers> values{};
  for (int64_t f = 0; f < kNumbers; ++f) {
    for (int64_t k = 0; k < kPieces; ++k) {
      const int64_t piece =
          std::llround(double(theirs[f * kPieces + k]) * double(ranks));
      values[f] |= piece << (16 * k);
    }
    values[f] -= 1;
  }
  return *PositionFromNumbers(values);
}

// Whether every address ("host:port") is on a loopback host.
bool AllOnLoopback(const std::vector<std::string>& addresses) {
  for (const std::string& a : addresses) {
    if (!rpc::IsLoopbackHost(HostOfAddress(a))) return false;
  }
  return true;
}

// This rank's collective. On a GPU, NCCL: the chief makes the unique id and
// publishes it through its Coordinator; every other worker fetches it from
// there. On the CPU, the ranks meet in the chief's Coordinator's store,
// each listening on its task's own host: over Gloo when all are on
// loopback or the run has no TLS, else over the TLS ring (tls_ring.h).
StatusOr<std::unique_ptr<kernels::Collective>> JoinRun(
    const kernels::Context& ctx, const JobFile& job,
    const WorkerOptions& options, const AllreduceLayout& layout) {
  const int num_workers = layout.size;
  const std::string self = TaskName{Role::kWorker, options.index}.ToString();
  kernels::CollectiveLimits limits;
  limits.timeout = std::chrono::seconds(job.train.collective_timeout);
  limits.timeout_name = "collective_timeout in [train]";
  limits.cancel = options.cancel;
  if (ctx.device() != kernels::Device::kCuda) {
    const std::string host = options.workers.empty()
                                 ? std::string("127.0.0.1")
                                 : std::string(HostOfAddress(
                                       options.workers[size_t(options.index)]));
    // The set-up waits for the slowest rank to start, as FetchCommId does.
    const std::chrono::milliseconds join = std::max<std::chrono::milliseconds>(
        limits.timeout, std::chrono::seconds(job.train.coordinator_timeout));
    if (num_workers == 1) {
      kernels::MemoryStore store;
      return kernels::JoinGloo(store, "gloo/", host, 0, 1, limits, join);
    }
    if (layout.rank == 0 && options.coordinator == nullptr) {
      return FailedPreconditionError(
          "the chief of an allreduce run of several workers needs its "
          "Coordinator service for the ranks to meet");
    }
    std::unique_ptr<kernels::KeyValueStore> store;
    if (options.coordinator != nullptr) {
      store = std::make_unique<LocalCoordinatorStore>(options.coordinator,
                                                      options.cancel);
    } else {
      store = std::make_unique<CoordinatorStore>(
          options.workers[0], options.credentials, self, options.cancel,
          options.incarnation, join);
    }
    // Gloo's transport is cleartext: it carries the gradients only where
    // every rank is on loopback, or where the run has no TLS (tls = false,
    // which the launcher warns of).
    if (options.credentials.tls.on() && !AllOnLoopback(options.workers)) {
      return JoinTlsRing(*store, "ring/", host, layout.rank, num_workers,
                         options.credentials.tls, limits, join);
    }
    return kernels::JoinGloo(*store, "gloo/", host, layout.rank, num_workers,
                             limits, join);
  }
  std::string id;
  if (layout.rank == 0) {
    DTF_ASSIGN_OR_RETURN(id, kernels::NewNcclId());
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
  return kernels::JoinNccl(ctx, id, layout.rank, num_workers, limits);
}

class AllreduceUpdate : public ReplicaUpdate {
 public:
  AllreduceUpdate(const kernels::Context& ctx, Model* model,
                  Optimizers optimizers,
                  std::vector<kernels::OptimizerState> states,
                  int64_t global_step, bool overlap)
      : ReplicaUpdate(ctx, model, std::move(optimizers), std::move(states),
                      global_step),
        buckets_(PlanGradientBuckets(model->variables())),
        averaged_(model->variables().size()),
        vote_(ctx.device() == kernels::Device::kCpu && !buckets_.empty()),
        overlap_(overlap && ctx.device() == kernels::Device::kCpu),
        bucket_of_(model->variables().size(), buckets_.size()) {
    // One buffer a bucket: several are in flight at once. The first
    // bucket's vote goes ahead of its gradients.
    for (size_t i = 0; i < buckets_.size(); ++i) {
      const int64_t at = vote_ && i == 0 ? kVoteSlots : 0;
      packed_.push_back(
          kernels::Tensor::Empty({at + buckets_[i].size}, ctx.memory()));
      for (size_t v : buckets_[i].vars) bucket_of_[v] = i;
    }
    waiting_.assign(buckets_.size(), 0);
  }

  // Joins the run as `layout` places this worker and starts from rank
  // 0's values.
  Status Join(const JobFile& job, const WorkerOptions& options,
              const AllreduceLayout& layout, const TrainHooks& hooks) {
    own_shard_ = options.index;
    shards_ = std::max(1, int(options.workers.size()));
    DTF_ASSIGN_OR_RETURN(comm_, JoinRun(ctx_, job, options, layout));
    const std::string threads =
        ctx_.device() == kernels::Device::kCpu
            ? StrCat(" (", ctx_.num_threads(), " compute thread",
                     ctx_.num_threads() == 1 ? "" : "s", ")")
            : std::string();
    hooks.Note(StrCat(TaskName{Role::kWorker, options.index}.ToString(),
                      ": joined the ", comm_->backend(), " collective as rank ",
                      comm_->rank(), " of ", comm_->size(), threads,
                      overlap_
                          ? StrCat("; ", buckets_.size(), " gradient bucket",
                                   buckets_.size() == 1 ? "" : "s",
                                   " averaged during the backward pass")
                          : std::string()));
    // The vote's header: the vote, then every input shard's position.
    positions_.resize(size_t(shards_));
    if (vote_) {
      header_ = kVoteSlots + int64_t(shards_) * kPositionSlots;
      step_positions_.resize(size_t(shards_));
      packed_.front() = kernels::Tensor::Empty(
          {header_ + buckets_.front().size}, ctx_.memory());
    }
    if (overlap_) {
      reducer_ = std::make_unique<BucketReducer>(
          comm_.get(), [this](size_t index, const kernels::Tensor& bucket) {
            // The vote the first bucket carries: another rank ended the
            // loop, and every rank skips the step's later buckets.
            if (!vote_ || index != 0) return true;
            return ReadVote(bucket.data()) == Agreement::kStep;
          });
    }
    for (Variable& v : model_->variables()) {
      DTF_RETURN_IF_ERROR(comm_->Broadcast(&v.value, 0));
    }
    return OkStatus();
  }

  // After Join, when the run is restored: rank 0's `mine` (what it
  // restored) reaches every rank, with its optimizer slots; every replica
  // takes its global step and update counts. Returns what rank 0 sent.
  StatusOr<AllreduceResume> ShareRestored(const AllreduceResume& mine) {
    const size_t n = model_->variables().size();
    const std::vector<float> packed = PackAllreduceResume(mine, n, shards_);
    kernels::Tensor header =
        kernels::Tensor::FromValues({int64_t(packed.size())}, packed)
            .CloneIn(ctx_.memory());
    DTF_RETURN_IF_ERROR(comm_->Broadcast(&header, 0));
    const kernels::Tensor back = header.CloneIn(kernels::Memory::kHost);
    DTF_ASSIGN_OR_RETURN(AllreduceResume sent,
                         UnpackAllreduceResume(back.span(), n, shards_));
    if (!sent.restored) return sent;
    // Until a step reads it, a shard's committed position is the restored
    // one (a checkpoint before then records it so).
    for (size_t s = 0; s < positions_.size() && s < sent.positions.size();
         ++s) {
      positions_[s] = sent.positions[s];
    }
    for (size_t v = 0; v < n; ++v) {
      kernels::OptimizerState& state = states_[v];
      for (int k = 0; k < state.num_slots(); ++k) {
        DTF_RETURN_IF_ERROR(comm_->Broadcast(&state.slot(k), 0));
      }
      state.set_step(sent.update_counts[v]);
    }
    step_ = sent.global_step;
    return sent;
  }

  bool collective() const override { return true; }
  bool consistent() const override { return consistent_; }
  // On the CPU the vote rides on the first gradient bucket (its host
  // memory takes it as it is); on a GPU it stays a collective of its own.
  bool votes_in_apply() const override { return vote_; }
  bool joins_idle() const override { return vote_; }
  Agreement Agreed() const override { return agreed_; }
  // On the CPU, where the positions ride on the vote.
  bool commits_positions() const override { return vote_; }
  std::vector<std::optional<InputPosition>> committed_positions()
      const override {
    return positions_;
  }

  // This rank has no step to run: the first bucket's collective with no
  // gradients (zeros), for the vote. Voting kIdle while another rank has a
  // batch, it joins the rest of that step with zeros and applies the same
  // update as every rank.
  StatusOr<Agreement> Vote(Agreement mine) override {
    kernels::Tensor& first = packed_.front();
    std::fill_n(first.data(), first.size(), 0.0f);
    WriteVote(mine, first.data());
    DTF_RETURN_IF_ERROR(comm_->AllReduceMean(&first));
    ReadHeader();
    if (agreed_ != Agreement::kStep) return agreed_;
    bool changed = false;
    Status st;
    for (size_t i = 1; i < buckets_.size() && st.ok(); ++i) {
      kernels::Tensor& bucket = packed_[i];
      std::fill_n(bucket.data(), bucket.size(), 0.0f);
      st = comm_->AllReduceMean(&bucket);
    }
    if (st.ok()) st = ApplyAveraged(&changed);
    if (!st.ok() && changed) consistent_ = false;
    DTF_RETURN_IF_ERROR(st);
    return agreed_;
  }

  bool overlaps() const override { return overlap_; }

  // Variable v's gradient is final: once every variable of the next
  // bucket to start is, that bucket is packed and its average started.
  Status GradientReady(size_t v, const PreparedBatch& batch,
                       std::vector<Gradient>* grads) override {
    const int shard = ShardOf(batch);
    if (bucket_of_[v] >= buckets_.size()) return OkStatus();
    if (!step_open_) {
      for (size_t i = 0; i < buckets_.size(); ++i) {
        waiting_[i] = buckets_[i].vars.size();
      }
      step_open_ = true;
    }
    --waiting_[bucket_of_[v]];
    while (started_ < buckets_.size() && waiting_[started_] == 0) {
      DTF_RETURN_IF_ERROR(
          StartBucket(started_++, shard, batch.position, *grads));
    }
    return OkStatus();
  }

  StatusOr<Agreement> Agree(Agreement mine) override {
    float agreed = float(int(mine));
    DTF_RETURN_IF_ERROR(comm_->AllReduceMin(&agreed));
    return Agreement(int(agreed));
  }

  // The step's gradients averaged over every rank and applied: the same
  // update on every replica. Moving statistics (untrainable), which each
  // rank's forward pass moved by its own batch, are averaged too.
  Status Apply(const PreparedBatch& batch, float, std::vector<Gradient>* grads,
               const PreparedBatch&) override {
    // Until the step is whole, a failure leaves some variables changed.
    bool changed = false;
    Status st = ApplyBuckets(ShardOf(batch), batch.position, grads, &changed);
    if (!st.ok() && changed) consistent_ = false;
    return st;
  }

 private:
  // The input shard `batch` was read from.
  int ShardOf(const PreparedBatch& batch) const {
    return batch.shard < 0 ? own_shard_ : batch.shard;
  }

  // Packs bucket i of `grads` (the first after the vote for a step and
  // the position of input shard `shard` after the step's batch).
  Status Pack(size_t i, int shard, const InputPosition& position,
              const std::vector<Gradient>& grads) {
    const std::vector<Variable>& vars = model_->variables();
    const GradientBucket& b = buckets_[i];
    const int64_t at = vote_ && i == 0 ? header_ : 0;
    kernels::Tensor& bucket = packed_[i];
    if (at > 0) {
      std::fill_n(bucket.data(), at, 0.0f);
      WriteVote(Agreement::kStep, bucket.data());
      WritePosition(position, shard, bucket.data() + kVoteSlots);
    }
    for (size_t k = 0; k < b.vars.size(); ++k) {
      const size_t v = b.vars[k];
      DTF_RETURN_IF_ERROR(
          PackGradient(ctx_, vars[v], grads[v], at + b.offsets[k], &bucket));
    }
    return OkStatus();
  }

  Status StartBucket(size_t i, int shard, const InputPosition& position,
                     const std::vector<Gradient>& grads) {
    DTF_RETURN_IF_ERROR(Pack(i, shard, position, grads));
    reducer_->Start(i, &packed_[i]);
    return OkStatus();
  }

  // Every bucket averaged: on the communication thread, those the backward
  // pass did not start yet started now, in order; else one after the other
  // here.
  Status AverageBuckets(int shard, const InputPosition& position,
                        const std::vector<Gradient>& grads) {
    if (reducer_ != nullptr) {
      Status st;
      while (st.ok() && started_ < buckets_.size()) {
        st = StartBucket(started_++, shard, position, grads);
      }
      Status reduced = reducer_->Finish();
      started_ = 0;
      step_open_ = false;
      DTF_RETURN_IF_ERROR(st);
      DTF_RETURN_IF_ERROR(reduced);
      if (vote_) ReadHeader();
      return OkStatus();
    }
    for (size_t i = 0; i < buckets_.size(); ++i) {
      DTF_RETURN_IF_ERROR(Pack(i, shard, position, grads));
      DTF_RETURN_IF_ERROR(comm_->AllReduceMean(&packed_[i]));
      if (vote_ && i == 0) {
        ReadHeader();
        if (agreed_ != Agreement::kStep) return OkStatus();
      }
    }
    return OkStatus();
  }

  // The averaged first bucket's vote and, for a step, the position of
  // each shard read.
  void ReadHeader() {
    const float* header = packed_.front().data();
    agreed_ = ReadVote(header);
    if (agreed_ != Agreement::kStep) return;
    const int ranks = comm_->size();
    for (int s = 0; s < shards_; ++s) {
      step_positions_[size_t(s)] = ReadPosition(header + kVoteSlots, s, ranks);
    }
  }

  Status ApplyBuckets(int shard, const InputPosition& position,
                      std::vector<Gradient>* grads, bool* changed) {
    DTF_RETURN_IF_ERROR(AverageBuckets(shard, position, *grads));
    // Another rank ended the loop: every rank leaves the step here.
    if (agreed_ != Agreement::kStep) return OkStatus();
    return ApplyAveraged(changed);
  }

  // Every bucket averaged: the average applied, the same update on every
  // replica. It is over every rank, those whose input ended adding zeros
  // (as PyTorch's Join divides by the initial world size): a step fewer
  // ranks have a batch for moves the model less, each example weighing
  // what it weighs in a step of every rank.
  Status ApplyAveraged(bool* changed) {
    std::vector<Variable>& vars = model_->variables();
    for (size_t i = 0; i < buckets_.size(); ++i) {
      const GradientBucket& b = buckets_[i];
      const int64_t at = vote_ && i == 0 ? header_ : 0;
      for (size_t k = 0; k < b.vars.size(); ++k) {
        const size_t v = b.vars[k];
        DTF_RETURN_IF_ERROR(kernels::Unpack(ctx_, packed_[i], at + b.offsets[k],
                                            vars[v].value.shape(),
                                            &averaged_[v]));
        *changed = true;
        DTF_RETURN_IF_ERROR(optimizer(vars[v]).ApplyDense(
            ctx_, &vars[v].value, averaged_[v], &states_[v]));
      }
    }
    for (Variable& v : vars) {
      if (v.trainable) continue;
      *changed = true;  // the average is made in place
      DTF_RETURN_IF_ERROR(comm_->AllReduceMean(&v.value));
    }
    ++step_;
    // The shards read this step move on; the others keep their positions.
    for (size_t s = 0; vote_ && s < step_positions_.size(); ++s) {
      if (step_positions_[s]) positions_[s] = step_positions_[s];
    }
    return OkStatus();
  }

  const std::vector<GradientBucket> buckets_;
  // Each bucket's packed gradients (the first's after the vote).
  std::vector<kernels::Tensor> packed_;
  std::vector<kernels::Tensor> averaged_;
  std::unique_ptr<kernels::Collective> comm_;
  // Whether the vote rides on the first bucket (votes_in_apply).
  const bool vote_;
  // The vote's header in the first bucket: kVoteSlots, then on the CPU
  // kPositionSlots a rank.
  int64_t header_ = kVoteSlots;
  // Buckets start during the backward pass, on reducer_'s thread.
  const bool overlap_;
  // The bucket of each variable (buckets_.size(): none, untrainable).
  std::vector<size_t> bucket_of_;
  // The step's variables each bucket still waits for; the buckets started
  // (0 .. started_-1); whether this step's first gradient arrived.
  std::vector<size_t> waiting_;
  size_t started_ = 0;
  bool step_open_ = false;
  // Declared last: destroyed (its thread joined) before what it uses.
  std::unique_ptr<BucketReducer> reducer_;
  // What the last vote agreed on.
  Agreement agreed_ = Agreement::kStep;
  // This worker's own input shard, and the run's shards (its worker slots:
  // allreduce_layout.h).
  int own_shard_ = 0;
  int shards_ = 1;
  // Each shard's position after the batch of the step under way (read
  // with its vote; nullopt: not read in it), and after the last step
  // applied whole that read it.
  std::vector<std::optional<InputPosition>> step_positions_;
  std::vector<std::optional<InputPosition>> positions_;
  bool consistent_ = true;
};

}  // namespace

StatusOr<std::unique_ptr<Update>> MakeAllreduceUpdate(
    const kernels::Context& ctx, const JobFile& job,
    const WorkerOptions& options, const AllreduceLayout& layout,
    const TrainHooks& hooks, FeatureLayer* layer, Model* model,
    AllreduceResume* resumed) {
  DTF_ASSIGN_OR_RETURN(Optimizers optimizers, MakeOptimizers(job.train));
  std::vector<kernels::OptimizerState> states =
      NewOptimizerStates(optimizers, *model, VariableShapes(*model));
  AllreduceResume mine;
  mine.update_counts.assign(model->variables().size(), 0);
  if (options.resume && options.index == 0) {
    DTF_ASSIGN_OR_RETURN(mine, RestoreAllreduceChief(job, options, hooks, layer,
                                                     model, &states));
  }
  auto update = std::make_unique<AllreduceUpdate>(
      ctx, model, std::move(optimizers), std::move(states), mine.global_step,
      job.train.overlap_communication);
  DTF_RETURN_IF_ERROR(update->Join(job, options, layout, hooks));
  if (options.resume) {
    DTF_ASSIGN_OR_RETURN(*resumed, update->ShareRestored(mine));
  }
  return std::unique_ptr<Update>(std::move(update));
}

}  // namespace dtf::runtime
