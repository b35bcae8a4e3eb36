// The update of an allreduce run: every worker holds a replica of the whole
// model on its device; each step's gradients are averaged with every other
// worker's through the collective (lib/kernels/collective.h: NCCL between
// GPUs, Gloo between CPU processes) and the same optimizer
// update is applied everywhere, so the replicas stay equal. Sparse
// gradients are densified for the average (Horovod's sparse_as_dense).
// A peer lost or hung fails the collective under way within
// train.collective_timeout (collective.h) and so the step, on every rank.
#include <algorithm>
#include <chrono>
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
#include "lib/runtime/train/allreduce_restore.h"
#include "lib/runtime/train/tls_ring.h"
#include "lib/runtime/train/update.h"
#include "lib/runtime/train/update_replica.h"

namespace dtf::runtime {
namespace {

// The most one gradient bucket holds (PyTorch DDP's default): large enough
// that the collective runs at full bandwidth, small enough to bound the extra
// memory.
constexpr int64_t kBucketBytes = int64_t{25} << 20;

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

// The vote a step's first gradient bucket carries ahead of the gradients
// on the CPU (Update::votes_in_apply): one slot per Agreement value, 1 where
// the rank votes; after the average a slot is above 0 when some rank voted
// for it, and the smallest such value is the agreement.
constexpr int64_t kVoteSlots = 3;

void WriteVote(Agreement mine, float* slots) {
  for (int64_t a = 0; a < kVoteSlots; ++a) {
    slots[a] = a == int64_t(mine) ? 1.0f : 0.0f;
  }
}

Agreement ReadVote(const float* slots) {
  for (int64_t a = 0; a < kVoteSlots; ++a) {
    if (slots[a] > 0.0f) return Agreement(a);
  }
  return Agreement::kCancel;  // no vote arrived: nothing to agree on
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
    const WorkerOptions& options, int num_workers) {
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
    if (options.index == 0 && options.coordinator == nullptr) {
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
          options.workers[0], options.credentials, self, options.cancel);
    }
    // Gloo's transport is cleartext: it carries the gradients only where
    // every rank is on loopback, or where the run has no TLS (tls = false,
    // which the launcher warns of).
    if (options.credentials.tls.on() && !AllOnLoopback(options.workers)) {
      return JoinTlsRing(*store, "ring/", host, options.index, num_workers,
                         options.credentials.tls, limits, join);
    }
    return kernels::JoinGloo(*store, "gloo/", host, options.index, num_workers,
                             limits, join);
  }
  std::string id;
  if (options.index == 0) {
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
  return kernels::JoinNccl(ctx, id, options.index, num_workers, limits);
}

class AllreduceUpdate : public ReplicaUpdate {
 public:
  AllreduceUpdate(const kernels::Context& ctx, Model* model,
                  Optimizers optimizers,
                  std::vector<kernels::OptimizerState> states,
                  int64_t global_step)
      : ReplicaUpdate(ctx, model, std::move(optimizers), std::move(states),
                      global_step),
        buckets_(PlanBuckets(model->variables())),
        averaged_(model->variables().size()),
        vote_(ctx.device() == kernels::Device::kCpu && !buckets_.empty()) {
    int64_t capacity = 0;
    for (const Bucket& b : buckets_) capacity = std::max(capacity, b.size);
    bucket_ = kernels::Tensor::Empty({capacity + kVoteSlots}, ctx.memory());
  }

  // Joins the run and starts from worker 0's values.
  Status Join(const JobFile& job, const WorkerOptions& options,
              const TrainHooks& hooks) {
    const int num_workers = std::max(1, int(options.workers.size()));
    DTF_ASSIGN_OR_RETURN(comm_, JoinRun(ctx_, job, options, num_workers));
    const std::string threads =
        ctx_.device() == kernels::Device::kCpu
            ? StrCat(" (", ctx_.num_threads(), " compute thread",
                     ctx_.num_threads() == 1 ? "" : "s", ")")
            : std::string();
    hooks.Note(StrCat(TaskName{Role::kWorker, options.index}.ToString(),
                      ": joined the ", comm_->backend(), " collective as rank ",
                      comm_->rank(), " of ", comm_->size(), threads));
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
    const std::vector<float> packed =
        PackAllreduceResume(mine, n, comm_->size());
    kernels::Tensor header =
        kernels::Tensor::FromValues({int64_t(packed.size())}, packed)
            .CloneIn(ctx_.memory());
    DTF_RETURN_IF_ERROR(comm_->Broadcast(&header, 0));
    const kernels::Tensor back = header.CloneIn(kernels::Memory::kHost);
    DTF_ASSIGN_OR_RETURN(AllreduceResume sent,
                         UnpackAllreduceResume(back.span(), n, comm_->size()));
    if (!sent.restored) return sent;
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
  Agreement Agreed() const override { return agreed_; }

  // This rank has no step to run: the first bucket's collective with no
  // gradients (zeros), for the vote alone.
  StatusOr<Agreement> Vote(Agreement mine) override {
    const Bucket& first = buckets_.front();
    bucket_.Resize({first.size + kVoteSlots});
    std::fill_n(bucket_.data(), first.size + kVoteSlots, 0.0f);
    WriteVote(mine, bucket_.data());
    DTF_RETURN_IF_ERROR(comm_->AllReduceMean(&bucket_));
    agreed_ = ReadVote(bucket_.data());
    return agreed_;
  }

  StatusOr<Agreement> Agree(Agreement mine) override {
    float agreed = float(int(mine));
    DTF_RETURN_IF_ERROR(comm_->AllReduceMin(&agreed));
    return Agreement(int(agreed));
  }

  // The step's gradients averaged over every rank and applied: the same
  // update on every replica. Moving statistics (untrainable), which each
  // rank's forward pass moved by its own batch, are averaged too.
  Status Apply(const PreparedBatch&, float, std::vector<Gradient>* grads,
               const PreparedBatch&) override {
    // Until the step is whole, a failure leaves some variables changed.
    bool changed = false;
    Status st = ApplyBuckets(grads, &changed);
    if (!st.ok() && changed) consistent_ = false;
    return st;
  }

 private:
  Status ApplyBuckets(std::vector<Gradient>* grads, bool* changed) {
    std::vector<Variable>& vars = model_->variables();
    for (size_t i = 0; i < buckets_.size(); ++i) {
      const Bucket& b = buckets_[i];
      // The first bucket's vote goes ahead of its gradients.
      const int64_t at = vote_ && i == 0 ? kVoteSlots : 0;
      bucket_.Resize({at + b.size});
      if (at > 0) WriteVote(Agreement::kStep, bucket_.data());
      for (size_t k = 0; k < b.vars.size(); ++k) {
        const size_t v = b.vars[k];
        DTF_RETURN_IF_ERROR(PackGradient(ctx_, vars[v], (*grads)[v],
                                         at + b.offsets[k], &bucket_));
      }
      DTF_RETURN_IF_ERROR(comm_->AllReduceMean(&bucket_));
      if (at > 0) {
        agreed_ = ReadVote(bucket_.data());
        // Another rank ended the loop: every rank leaves the step here.
        if (agreed_ != Agreement::kStep) return OkStatus();
      }
      for (size_t k = 0; k < b.vars.size(); ++k) {
        const size_t v = b.vars[k];
        DTF_RETURN_IF_ERROR(kernels::Unpack(ctx_, bucket_, at + b.offsets[k],
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
    return OkStatus();
  }

  const std::vector<Bucket> buckets_;
  kernels::Tensor bucket_;
  std::vector<kernels::Tensor> averaged_;
  std::unique_ptr<kernels::Collective> comm_;
  // Whether the vote rides on the first bucket (votes_in_apply).
  const bool vote_;
  // What the last vote agreed on.
  Agreement agreed_ = Agreement::kStep;
  bool consistent_ = true;
};

}  // namespace

StatusOr<std::unique_ptr<Update>> MakeAllreduceUpdate(
    const kernels::Context& ctx, const JobFile& job,
    const WorkerOptions& options, const TrainHooks& hooks, FeatureLayer* layer,
    Model* model, AllreduceResume* resumed) {
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
      ctx, model, std::move(optimizers), std::move(states), mine.global_step);
  DTF_RETURN_IF_ERROR(update->Join(job, options, hooks));
  if (options.resume) {
    DTF_ASSIGN_OR_RETURN(*resumed, update->ShareRestored(mine));
  }
  return std::unique_ptr<Update>(std::move(update));
}

}  // namespace dtf::runtime
