#include "lib/runtime/ps/param_store.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <utility>

#include "fmt/format.h"
#include "lib/base/os.h"
#include "lib/base/strings.h"
#include "lib/base/task_name.h"
#include "lib/runtime/checkpoint/bundle.h"
#include "lib/runtime/checkpoint/checkpoint.h"
#include "lib/runtime/model/feature_layer.h"
#include "lib/runtime/model/model.h"
#include "lib/runtime/model/optimizers.h"
#include "lib/runtime/ps/param_store_shard.h"
#include "lib/runtime/ps/tensor_pieces.h"

namespace dtf::runtime {

using StoreClock = std::chrono::steady_clock;

ParamStore::ParamStore(const JobFile& job, const StoreOptions& options)
    : options_(options),
      mode_(job.train.mode),
      replicas_to_aggregate_(job.train.replicas_to_aggregate),
      max_staleness_(job.train.max_staleness),
      heartbeat_timeout_(job.train.heartbeat_timeout),
      partition_{options.num_ps},
      ctx_(kernels::Context::Cpu(options.threads)),
      positions_(size_t(options.num_workers)),
      last_seen_(size_t(options.num_workers), StoreClock::now()),
      done_(size_t(options.num_workers), false) {
  // A reserved slot counts as finished until it pushes (Push).
  if (options.started_workers > 0 &&
      options.started_workers < options.num_workers) {
    std::fill(done_.begin() + std::max(options.started_workers, 1), done_.end(),
              true);
  }
}

ParamStore::~ParamStore() = default;

int64_t MemoryHeadroom(int64_t limit_bytes) {
  return std::max<int64_t>(limit_bytes / 10, int64_t{64} << 20);
}

namespace {

// Refuses a partition that would take the PS near its memory limit:
// `planned` bytes of its tables made so far, `need` more for `v`, `rows`
// of them here.
Status CheckMemory(const StoreOptions& options, const VariableSpec& v,
                   int64_t rows, int slots, int64_t need, int64_t in_use,
                   int64_t planned) {
  if (!options.memory_limit) return OkStatus();
  const MemoryLimit& limit = *options.memory_limit;
  const int64_t room = limit.bytes - MemoryHeadroom(limit.bytes);
  if (in_use + planned + need <= room) return OkStatus();
  return ResourceExhaustedError(fmt::format(
      "{}: table {} would pass the memory limit: its {} rows (of {}, on {} "
      "parameter servers) of {} floats with {} optimizer slot(s) need {}, "
      "and {} are in use with the {} of the tables before it; the limit is "
      "{} ({}) less {} kept free. Run more parameter servers or raise the "
      "limit",
      TaskName{Role::kPs, options.index}.ToString(), v.name, rows, v.shape[0],
      options.num_ps, PieceCols(v.shape), slots, HumanBytes(need),
      HumanBytes(in_use), HumanBytes(planned), HumanBytes(limit.bytes),
      limit.source, HumanBytes(MemoryHeadroom(limit.bytes))));
}

}  // namespace

StatusOr<std::unique_ptr<ParamStore>> ParamStore::Create(
    const JobFile& job, const StoreOptions& options) {
  if (!job.model) {
    return FailedPreconditionError(StrCat(job.path, ": no [model] table"));
  }
  if (options.num_ps < 1 || options.index < 0 ||
      options.index >= options.num_ps || options.num_workers < 0 ||
      options.threads < 1) {
    return InvalidArgumentError(
        StrCat(TaskName{Role::kPs, options.index}.ToString(), " of ",
               options.num_ps, " with ", options.num_workers, " workers and ",
               options.threads, " threads is no parameter server"));
  }
  std::unique_ptr<ParamStore> ps(new ParamStore(job, options));
  const TrainSpec& train = job.train;
  DTF_ASSIGN_OR_RETURN(ps->wide_optimizer_,
                       MakeOptimizer(train.optimizer ? *train.optimizer
                                                     : *train.wide_optimizer));
  DTF_ASSIGN_OR_RETURN(ps->deep_optimizer_,
                       MakeOptimizer(train.optimizer ? *train.optimizer
                                                     : *train.deep_optimizer));
  DTF_ASSIGN_OR_RETURN(
      FeatureLayer layer,
      FeatureLayer::Create(job.schema, job.features, *job.model));
  // Only this PS's rows are ever made: a table far larger than one PS is
  // spread over all of them.
  DTF_ASSIGN_OR_RETURN(std::vector<VariableSpec> layout,
                       Model::Layout(layer, *job.model));
  const int p = options.index;
  const uint64_t seed = uint64_t(train.seed);
  const int64_t in_use =
      options.memory_limit ? MemoryInUse(*options.memory_limit) : 0;
  int64_t planned = 0;
  for (const VariableSpec& v : layout) {
    auto shard = std::make_unique<Shard>();
    shard->name = v.name;
    shard->shape = v.shape;
    shard->cols = PieceCols(shard->shape);
    shard->sparse = v.sparse;
    shard->trainable = v.trainable;
    shard->part = v.part;
    const int64_t rows = shard->shape[0];
    {
      const auto [first, end] = ps->partition_.DenseRange(rows, p);
      const int64_t local =
          v.sparse ? ps->partition_.SparseRows(rows, p) : end - first;
      int slots = 0;
      if (v.trainable) {
        const kernels::Optimizer& o =
            v.part == Part::kWide ? *ps->wide_optimizer_ : *ps->deep_optimizer_;
        slots = o.CreateState(std::vector<int64_t>{0, shard->cols}).num_slots();
      }
      const int64_t need = local * shard->cols * 4 * (1 + slots);
      DTF_RETURN_IF_ERROR(
          CheckMemory(options, v, local, slots, need, in_use, planned));
      planned += need;
    }
    std::vector<int64_t> ids;
    if (v.sparse) {
      const int64_t local = ps->partition_.SparseRows(rows, p);
      for (int64_t r = 0; r < local; ++r) {
        ids.push_back(ps->partition_.GlobalRow(r, p));
      }
    } else {
      std::tie(shard->begin, shard->end) = ps->partition_.DenseRange(rows, p);
      for (int64_t r = shard->begin; r < shard->end; ++r) ids.push_back(r);
    }
    shard->value = kernels::Tensor::Empty({int64_t(ids.size()), shard->cols});
    // A restore writes every row (or fails the PS): initial values drawn
    // for them first would be thrown away, and drawing them (a normal
    // sample a value) takes longer than reading the checkpoint.
    if (options.restore_from.empty()) {
      InitializeRows(v, seed, ids, shard->value.data());
    }
    if (v.trainable) {
      shard->optimizer = v.part == Part::kWide ? ps->wide_optimizer_.get()
                                               : ps->deep_optimizer_.get();
      shard->state = shard->optimizer->CreateState(shard->value.shape());
    }
    ps->shards_.push_back(std::move(shard));
  }
  if (!options.restore_from.empty()) {
    DTF_RETURN_IF_ERROR(ps->Restore(options.restore_from));
  }
  return ps;
}

ParamStore::Shard* ParamStore::FindLocked(std::string_view name) {
  for (auto& s : shards_) {
    if (s->name == name) return s.get();
  }
  return nullptr;
}

void ParamStore::SeenLocked(int worker) {
  if (worker >= 0 && worker < options_.num_workers) {
    last_seen_[size_t(worker)] = StoreClock::now();
  }
}

int ParamStore::RequiredLocked() const {
  const int64_t wanted = replicas_to_aggregate_ > 0 ? replicas_to_aggregate_
                                                    : options_.num_workers;
  // A worker whose push waits in the step counts until the step is
  // applied, even once it finished (its last batch pulls nothing and it
  // leaves at once): the step still waits for the other live workers'
  // pushes, which would otherwise come late and be dropped as stale.
  int live = 0;
  const auto now = StoreClock::now();
  for (int w = 0; w < options_.num_workers; ++w) {
    const bool pending =
        std::find(pending_workers_.begin(), pending_workers_.end(), w) !=
        pending_workers_.end();
    if (pending || (!done_[size_t(w)] &&
                    now - last_seen_[size_t(w)] < heartbeat_timeout_)) {
      ++live;
    }
  }
  return static_cast<int>(std::min<int64_t>(wanted, live));
}

Status ParamStore::CheckPiecesLocked(std::span<const PieceView> pieces) {
  const int index = options_.index;
  for (const PieceView& piece : pieces) {
    Shard* s = FindLocked(piece.name);
    if (s == nullptr) {
      return InvalidArgumentError(
          StrCat("no variable \"", piece.name, "\" on ps:", index));
    }
    if (!piece.slot.empty()) {
      return InvalidArgumentError(
          StrCat("variable \"", s->name, "\": a gradient of slot \"",
                 piece.slot, "\" on ps:", index, "; slots take none"));
    }
    if (s->sparse && !s->trainable) {
      return InvalidArgumentError(StrCat(
          "variable \"", s->name, "\" on ps:", index, " takes no gradients"));
    }
    DTF_RETURN_IF_ERROR(CheckPieceSize(s->name, piece, s->cols));
    if (!s->sparse) {
      // first + rows may not be computed: both come from the wire.
      const int64_t first = piece.row_offset;
      if (!piece.ids.empty() || first < s->begin || first > s->end ||
          piece.rows > s->end - first) {
        return InvalidArgumentError(
            StrCat("variable \"", s->name, "\": ", piece.rows,
                   " rows from row ", first, " are not on ps:", index,
                   " (rows [", s->begin, ", ", s->end, "))"));
      }
      continue;
    }
    // A sparse piece names each of its rows.
    if (int64_t(piece.ids.size()) != piece.rows) {
      return InvalidArgumentError(
          StrCat("variable \"", s->name, "\": a piece of ", piece.rows,
                 " rows names ", piece.ids.size(), " of them"));
    }
    for (const int64_t id : piece.ids) {
      if (id < 0 || partition_.Owner(id) != index ||
          partition_.LocalRow(id) >= s->value.rows()) {
        return InvalidArgumentError(StrCat("variable \"", s->name, "\": row ",
                                           id, " is not on ps:", index));
      }
    }
  }
  return OkStatus();
}

void ParamStore::AccumulateLocked(std::span<const PieceView> pieces) {
  for (const PieceView& piece : pieces) {
    Shard& s = *FindLocked(piece.name);
    s.Accumulate(piece, partition_);
  }
}

Status ParamStore::ApplySumsLocked(float scale) {
  Status first;
  for (auto& shard : shards_) {
    Shard& s = *shard;
    if (!s.touched) continue;
    // Every sum is cleared, even after an error: the next update starts
    // from nothing.
    if (first.ok()) first = s.Apply(ctx_, scale);
    s.touched = false;
  }
  return first;
}

void ParamStore::ApplyPendingLocked() {
  if (pending_workers_.empty()) return;
  const float scale = 1.0f / float(pending_workers_.size());
  // Every push was checked on arrival, so the step is applied whole; what
  // is left to fail is the optimizer's own work on valid input.
  if (Status st = ApplySumsLocked(scale); !st.ok()) apply_error_ = st;
  for (size_t i = 0; i < pending_workers_.size(); ++i) {
    CommitPositionLocked(pending_shards_[i], pending_positions_[i]);
  }
  pending_workers_.clear();
  pending_positions_.clear();
  pending_shards_.clear();
  ++global_step_;
  step_cv_.notify_all();
}

void ParamStore::CommitPositionLocked(
    int shard, const std::optional<InputPosition>& position) {
  if (!position) return;
  std::optional<InputPosition>& committed = positions_[size_t(shard)];
  if (committed && PositionNumbers(*position) < PositionNumbers(*committed)) {
    return;
  }
  committed = position;
}

void ParamStore::MaybeApplyLocked() {
  // After Shutdown the variables, and the positions committed with them,
  // stay as they were: a worker that leaves then (WorkerDone) does not
  // complete a step of the others' pushes alone.
  if (shutdown_) return;
  if (!pending_workers_.empty() &&
      int(pending_workers_.size()) >= RequiredLocked()) {
    ApplyPendingLocked();
  }
}

StatusOr<PushResult> ParamStore::Push(const PushHeader& header,
                                      std::span<const PieceView> pieces) {
  std::lock_guard<std::mutex> lock(mu_);
  const int worker = header.worker;
  if (worker < 0 || worker >= options_.num_workers) {
    return InvalidArgumentError(StrCat("no worker ", worker, " (the run has ",
                                       options_.num_workers, ")"));
  }
  const int shard = header.shard < 0 ? worker : header.shard;
  if (shard >= options_.num_workers) {
    return InvalidArgumentError(StrCat("worker ", worker, ": no input shard ",
                                       shard, " (the run has ",
                                       options_.num_workers, ")"));
  }
  SeenLocked(worker);
  if (shutdown_) return ShutDownLocked();
  if (!apply_error_.ok()) return apply_error_;
  // A worker that pushes trains: one that had finished its input took
  // another's (docs/launch.md, *Elastic workers*), and the sync steps
  // wait for it again.
  done_[size_t(worker)] = false;
  // Checked before anything is summed or applied, in both modes: a bad
  // piece is refused to its sender and changes nothing.
  DTF_RETURN_IF_ERROR(CheckPiecesLocked(pieces));
  PushResult result;
  if (mode_ != TrainMode::kSync) {
    // header.step comes from the wire: the difference may not be computed.
    int64_t staleness = 0;
    const bool overflow =
        __builtin_sub_overflow(global_step_, header.step, &staleness);
    if (max_staleness_ < 0 || (!overflow && staleness <= max_staleness_)) {
      AccumulateLocked(pieces);
      DTF_RETURN_IF_ERROR(ApplySumsLocked(1.0f));
      ++global_step_;
      step_cv_.notify_all();
      result.applied = true;
    }
    // Applied or dropped, the batch is done with.
    CommitPositionLocked(shard, header.position);
    result.global_step = global_step_;
    return result;
  }
  // Sync: gradients of an applied step, or a second push of one worker for
  // the current step, are stale.
  const bool fresh = header.step == global_step_ &&
                     std::find(pending_workers_.begin(), pending_workers_.end(),
                               worker) == pending_workers_.end();
  if (fresh) {
    AccumulateLocked(pieces);
    pending_workers_.push_back(worker);
    pending_positions_.push_back(header.position);
    pending_shards_.push_back(shard);
    result.applied = true;
    MaybeApplyLocked();
  } else {
    // Dropped as stale: the batch is done with.
    CommitPositionLocked(shard, header.position);
  }
  result.global_step = global_step_;
  return result;
}

void ParamStore::WorkerDone(int worker) {
  std::lock_guard<std::mutex> lock(mu_);
  if (worker >= 0 && worker < options_.num_workers) {
    done_[size_t(worker)] = true;
  }
  MaybeApplyLocked();
  step_cv_.notify_all();
}

void ParamStore::Shutdown(std::string_view reason) {
  std::lock_guard<std::mutex> lock(mu_);
  shutdown_ = true;
  shutdown_reason_ = std::string(reason);
  step_cv_.notify_all();
  shutdown_cv_.notify_all();
}

void ParamStore::Tick() {
  std::lock_guard<std::mutex> lock(mu_);
  MaybeApplyLocked();
}

bool ParamStore::WaitForShutdown(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  shutdown_cv_.wait_for(lock, timeout, [&] { return shutdown_; });
  return shutdown_;
}

Status ParamStore::ShutDownLocked() const {
  return absl::AbortedError(
      ToAbsl(StrCat("this parameter server was shut down (", shutdown_reason_,
                    "); the run is over")));
}

std::string ParamStore::shutdown_reason() const {
  std::lock_guard<std::mutex> lock(mu_);
  return shutdown_reason_;
}

int64_t ParamStore::global_step() const {
  std::lock_guard<std::mutex> lock(mu_);
  return global_step_;
}

std::vector<float> ParamStore::barrier_waits_ms() const {
  std::lock_guard<std::mutex> lock(mu_);
  return barrier_waits_ms_;
}

}  // namespace dtf::runtime
