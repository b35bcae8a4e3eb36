#include "lib/runtime/ps_service.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "lib/base/strings.h"
#include "lib/runtime/bundle.h"
#include "lib/runtime/checkpoint.h"
#include "lib/runtime/feature_layer.h"
#include "lib/runtime/model.h"
#include "lib/runtime/optimizers.h"
#include "lib/runtime/tensor_pieces.h"

namespace dtf::runtime {

using Clock = std::chrono::steady_clock;

struct PsService::Shard {
  std::string name;
  std::vector<int64_t> shape;  // of the whole variable
  int64_t cols = 1;
  bool sparse = false;
  bool trainable = true;
  Part part = Part::kDeep;
  int64_t begin = 0, end = 0;  // dense: the global rows held
  kernels::Tensor value;       // [local rows, cols]
  kernels::OptimizerState state;
  // Dense: the summed gradient of an update, kept between updates (a fresh
  // one per push cost page faults on every step).
  kernels::Tensor grad;
  // The pieces of the update being applied.
  std::vector<const rpc::TensorPiece*> pushed;
  // Sparse: a push's rows and their sum, kept between updates.
  std::vector<float> pushed_values;
  std::vector<std::pair<int64_t, int64_t>> pushed_rows;
  kernels::SparseGrad sparse_grad;
};

PsService::PsService(const JobFile& job, const PsOptions& options)
    : options_(options),
      mode_(job.train.mode),
      replicas_to_aggregate_(job.train.replicas_to_aggregate),
      max_staleness_(job.train.max_staleness),
      heartbeat_timeout_(job.train.heartbeat_timeout),
      partition_{options.num_ps},
      ctx_(kernels::Context::Cpu(options.threads)),
      last_seen_(size_t(options.num_workers), Clock::now()),
      done_(size_t(options.num_workers), false) {}

PsService::~PsService() = default;

StatusOr<std::unique_ptr<PsService>> PsService::Create(
    const JobFile& job, const PsOptions& options) {
  if (!job.model) {
    return FailedPreconditionError(StrCat(job.path, ": no [model] table"));
  }
  std::unique_ptr<PsService> ps(new PsService(job, options));
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
  for (const VariableSpec& v : layout) {
    auto shard = std::make_unique<Shard>();
    shard->name = v.name;
    shard->shape = v.shape;
    shard->cols = PieceCols(shard->shape);
    shard->sparse = v.sparse;
    shard->trainable = v.trainable;
    shard->part = v.part;
    const int64_t rows = shard->shape[0];
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
    InitializeRows(v, seed, ids, shard->value.data());
    if (v.trainable) {
      const kernels::Optimizer& opt =
          v.part == Part::kWide ? *ps->wide_optimizer_ : *ps->deep_optimizer_;
      shard->state = opt.CreateState(shard->value.shape());
    }
    ps->shards_.push_back(std::move(shard));
  }
  if (!options.restore_from.empty()) {
    DTF_RETURN_IF_ERROR(ps->Restore(options.restore_from));
  }
  return ps;
}

Status PsService::Restore(const std::string& path) {
  DTF_ASSIGN_OR_RETURN(Bundle bundle, Bundle::ReadFile(path));
  const int p = options_.index;
  // Copies this PS's rows of `all` (the whole variable) into `local`.
  auto take = [&](const Shard& s, const kernels::Tensor& all,
                  kernels::Tensor* local) {
    for (int64_t r = 0; r < s.value.rows(); ++r) {
      const int64_t global =
          s.sparse ? partition_.GlobalRow(r, p) : s.begin + r;
      std::memcpy(local->data() + r * s.cols, all.data() + global * s.cols,
                  size_t(s.cols) * 4);
    }
  };
  for (auto& shard : shards_) {
    Shard& s = *shard;
    DTF_ASSIGN_OR_RETURN(kernels::Tensor all,
                         ReadCheckpointTensor(bundle, s.name, "", s.shape));
    take(s, all, &s.value);
    if (!s.trainable) continue;
    for (int k = 0; k < s.state.num_slots(); ++k) {
      DTF_ASSIGN_OR_RETURN(
          kernels::Tensor slot,
          ReadCheckpointTensor(bundle, s.name, s.state.slot_name(k), s.shape));
      take(s, slot, &s.state.slot(k));
    }
    DTF_ASSIGN_OR_RETURN(int64_t step, ReadCheckpointStep(bundle, s.name));
    s.state.set_step(step);
  }
  DTF_ASSIGN_OR_RETURN(global_step_, ReadCheckpointStep(bundle, ""));
  return OkStatus();
}

PsService::Shard* PsService::FindLocked(const std::string& name) {
  for (auto& s : shards_) {
    if (s->name == name) return s.get();
  }
  return nullptr;
}

void PsService::SeenLocked(int worker) {
  if (worker >= 0 && worker < options_.num_workers) {
    last_seen_[size_t(worker)] = Clock::now();
  }
}

int PsService::RequiredLocked() const {
  const int64_t wanted = replicas_to_aggregate_ > 0 ? replicas_to_aggregate_
                                                    : options_.num_workers;
  int live = 0;
  const auto now = Clock::now();
  for (int w = 0; w < options_.num_workers; ++w) {
    if (!done_[size_t(w)] && now - last_seen_[size_t(w)] < heartbeat_timeout_) {
      ++live;
    }
  }
  return static_cast<int>(std::min<int64_t>(wanted, live));
}

Status PsService::CheckGradients(const std::vector<rpc::TensorPiece>& grads) {
  for (const rpc::TensorPiece& piece : grads) {
    Shard* s = FindLocked(piece.name());
    if (s == nullptr) {
      return InvalidArgumentError(StrCat("no variable \"", piece.name(), "\""));
    }
    DTF_RETURN_IF_ERROR(CheckPiece(piece, s->cols));
    if (!s->sparse) {
      // first + rows may not be computed: both come from the wire.
      const int64_t first = piece.row_offset();
      if (piece.ids_size() > 0 || first < s->begin || first > s->end ||
          piece.rows() > s->end - first) {
        return InvalidArgumentError(
            StrCat("variable \"", s->name, "\": ", piece.rows(),
                   " rows from row ", first, " are not on ps:", options_.index,
                   " (rows [", s->begin, ", ", s->end, "))"));
      }
      continue;
    }
    // A sparse piece names each of its rows: its values are read into
    // ids.size() rows.
    if (piece.ids_size() != piece.rows()) {
      return InvalidArgumentError(
          StrCat("variable \"", s->name, "\": a piece of ", piece.rows(),
                 " rows names ", piece.ids_size(), " of them"));
    }
    for (const int64_t id : piece.ids()) {
      if (id < 0 || partition_.Owner(id) != options_.index ||
          partition_.LocalRow(id) >= s->value.rows()) {
        return InvalidArgumentError(StrCat("variable \"", s->name, "\": row ",
                                           id,
                                           " is not on ps:", options_.index));
      }
    }
  }
  return OkStatus();
}

Status PsService::ApplyGradients(const std::vector<rpc::TensorPiece>& grads,
                                 float scale) {
  // Group the pieces by variable, then apply each variable's sum once.
  for (auto& s : shards_) s->pushed.clear();
  for (const rpc::TensorPiece& piece : grads) {
    FindLocked(piece.name())->pushed.push_back(&piece);
  }
  for (auto& shard : shards_) {
    Shard* s = shard.get();
    const std::vector<const rpc::TensorPiece*>& pieces = s->pushed;
    if (pieces.empty()) continue;
    const int64_t cols = s->cols;
    if (!s->sparse) {
      kernels::Tensor& grad = s->grad;
      grad.Resize(s->value.shape());
      std::fill_n(grad.data(), grad.size(), 0.0f);
      for (const rpc::TensorPiece* piece : pieces) {
        DTF_RETURN_IF_ERROR(
            AddPiece(*piece, cols, scale,
                     grad.data() + (piece->row_offset() - s->begin) * cols));
      }
      if (!s->trainable) {  // moving statistics: the pushes are deltas
        for (int64_t i = 0; i < grad.size(); ++i) s->value[i] += grad[i];
        continue;
      }
      const kernels::Optimizer& opt =
          s->part == Part::kWide ? *wide_optimizer_ : *deep_optimizer_;
      DTF_RETURN_IF_ERROR(opt.ApplyDense(ctx_, &s->value, grad, &s->state));
      continue;
    }
    // Every pushed row as (local row, where its values are), sorted, so that
    // rows pushed more than once are summed in arrival order.
    std::vector<float>& values = s->pushed_values;
    std::vector<std::pair<int64_t, int64_t>>& entries = s->pushed_rows;
    values.clear();
    entries.clear();
    for (const rpc::TensorPiece* piece : pieces) {
      const int64_t at = int64_t(values.size());
      values.resize(size_t(at + piece->ids_size() * cols));
      DTF_RETURN_IF_ERROR(ReadPiece(*piece, cols, values.data() + at));
      for (int i = 0; i < piece->ids_size(); ++i) {
        entries.emplace_back(partition_.LocalRow(piece->ids(i)), at + i * cols);
      }
    }
    if (entries.empty()) continue;
    std::sort(entries.begin(), entries.end());
    int64_t unique = 0;
    for (size_t i = 0; i < entries.size(); ++i) {
      unique += i == 0 || entries[i].first != entries[i - 1].first;
    }
    kernels::SparseGrad& grad = s->sparse_grad;
    grad.ids.Resize(unique);
    grad.rows.Resize({unique, cols});
    int64_t u = -1;
    for (size_t i = 0; i < entries.size(); ++i) {
      float* dst;
      if (i == 0 || entries[i].first != entries[i - 1].first) {
        grad.ids[++u] = entries[i].first;
        dst = grad.rows.data() + u * cols;
        std::fill_n(dst, cols, 0.0f);
      } else {
        dst = grad.rows.data() + u * cols;
      }
      const float* src = values.data() + entries[i].second;
      for (int64_t c = 0; c < cols; ++c) dst[c] += scale * src[c];
    }
    const kernels::Optimizer& opt =
        s->part == Part::kWide ? *wide_optimizer_ : *deep_optimizer_;
    DTF_RETURN_IF_ERROR(opt.ApplySparse(ctx_, &s->value, grad, &s->state));
  }
  return OkStatus();
}

void PsService::ApplyPendingLocked() {
  if (pending_.empty()) return;
  std::vector<rpc::TensorPiece> all;
  for (auto& push : pending_) {
    for (auto& piece : push) all.push_back(std::move(piece));
  }
  const float scale = 1.0f / float(pending_.size());
  // Every push was checked on arrival (AcceptPush), so the step is applied
  // whole; what is left to fail is the optimizer's own work on valid input.
  Status st = ApplyGradients(all, scale);
  if (!st.ok()) apply_error_ = st;
  pending_.clear();
  pending_workers_.clear();
  ++global_step_;
  step_cv_.notify_all();
}

namespace {

// Writes `header` and then `pieces`, packed into messages of at most
// kMaxPieceBytes each; the header rides on the first.
template <typename Writer>
grpc::Status WritePieces(Writer* writer, rpc::PullMessage header,
                         std::vector<rpc::TensorPiece>* pieces) {
  rpc::PullMessage message = std::move(header);
  int64_t bytes = 0;
  for (rpc::TensorPiece& piece : *pieces) {
    const int64_t size = int64_t(piece.values().size());
    if (bytes > 0 && bytes + size > kMaxPieceBytes) {
      if (!writer->Write(message)) {
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "client went away");
      }
      message.Clear();
      bytes = 0;
    }
    *message.add_pieces() = std::move(piece);
    bytes += size;
  }
  if (!writer->Write(message, grpc::WriteOptions().set_last_message())) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "client went away");
  }
  return grpc::Status::OK;
}

}  // namespace

namespace {

// Moves the gradient pieces of a step message to the end of `grads`.
void TakeGradients(rpc::StepMessage* message,
                   std::vector<rpc::TensorPiece>* grads) {
  for (rpc::TensorPiece& piece : *message->mutable_gradients()) {
    grads->push_back(std::move(piece));
  }
  message->clear_gradients();
}

}  // namespace

grpc::Status PsService::Gather(grpc::ServerContext* context,
                               const rpc::PullRequest& request,
                               std::vector<rpc::TensorPiece>* pieces,
                               rpc::PullHeader* header) {
  std::unique_lock<std::mutex> lock(mu_);
  SeenLocked(request.worker());
  // A worker waits at most for the step after this one. Asking for a later
  // one means this PS went back (restarted from a checkpoint) since the
  // worker last saw it: it gets the current values at once, and its step.
  const int64_t min_step =
      request.min_step() > global_step_ + 1 ? 0 : request.min_step();
  while (global_step_ < min_step && !shutdown_) {
    if (context->IsCancelled()) {
      return grpc::Status(grpc::StatusCode::CANCELLED, "pull cancelled");
    }
    step_cv_.wait_for(lock, std::chrono::milliseconds(100));
    if (!pending_.empty() && int(pending_.size()) >= RequiredLocked()) {
      ApplyPendingLocked();
    }
  }
  header->set_global_step(global_step_);
  // Appends what AppendPieces(tensor) makes for the value and, with slots,
  // for each optimizer slot of `s`.
  auto with_slots = [&](Shard* s, const auto& append) {
    append(s->value);
    if (!request.slots() || !s->trainable) return;
    (*header->mutable_slot_steps())[s->name] = s->state.step();
    for (int k = 0; k < s->state.num_slots(); ++k) {
      const size_t first = pieces->size();
      append(s->state.slot(k));
      for (size_t i = first; i < pieces->size(); ++i) {
        (*pieces)[i].set_slot(s->state.slot_name(k));
      }
    }
  };
  for (const std::string& name : request.dense()) {
    Shard* s = FindLocked(name);
    if (s == nullptr || s->sparse) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          StrCat("no dense variable \"", name, "\""));
    }
    with_slots(s, [&](const kernels::Tensor& t) {
      AppendDensePieces(s->name, s->shape, t.data(), s->value.rows(), s->cols,
                        s->begin, pieces);
    });
  }
  std::vector<int64_t> ids;
  std::vector<float> rows;
  for (const auto& sparse : request.sparse()) {
    Shard* s = FindLocked(sparse.name());
    if (s == nullptr || !s->sparse) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          StrCat("no sparse variable \"", sparse.name(), "\""));
    }
    ids.clear();
    if (sparse.all()) {
      for (int64_t r = 0; r < s->value.rows(); ++r) {
        ids.push_back(partition_.GlobalRow(r, options_.index));
      }
    } else {
      ids.assign(sparse.ids().begin(), sparse.ids().end());
    }
    for (const int64_t id : ids) {
      if (id < 0 || partition_.Owner(id) != options_.index ||
          partition_.LocalRow(id) >= s->value.rows()) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            StrCat("variable \"", s->name, "\": row ", id,
                                   " is not on ps:", options_.index));
      }
    }
    rows.resize(ids.size() * size_t(s->cols));
    with_slots(s, [&](const kernels::Tensor& t) {
      for (size_t i = 0; i < ids.size(); ++i) {
        std::memcpy(rows.data() + i * size_t(s->cols),
                    t.data() + partition_.LocalRow(ids[i]) * s->cols,
                    size_t(s->cols) * 4);
      }
      AppendSparsePieces(s->name, s->shape, ids.data(), rows.data(),
                         int64_t(ids.size()), s->cols, pieces);
    });
  }
  return grpc::Status::OK;
}

grpc::Status PsService::Pull(grpc::ServerContext* context,
                             const rpc::PullRequest* request,
                             grpc::ServerWriter<rpc::PullMessage>* writer) {
  if (grpc::Status st = CheckCall(*context, options_.credentials); !st.ok()) {
    return st;
  }
  std::vector<rpc::TensorPiece> pieces;
  rpc::PullMessage header;
  if (grpc::Status st =
          Gather(context, *request, &pieces, header.mutable_header());
      !st.ok()) {
    return st;
  }
  return WritePieces(writer, std::move(header), &pieces);
}

grpc::Status PsService::AcceptPush(const rpc::PushMessage::Header& header,
                                   std::vector<rpc::TensorPiece> grads,
                                   bool* applied, int64_t* global_step) {
  std::lock_guard<std::mutex> lock(mu_);
  const int worker = header.worker();
  if (worker < 0 || worker >= options_.num_workers) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        StrCat("no worker ", worker));
  }
  SeenLocked(worker);
  *applied = false;
  if (!apply_error_.ok()) return ToGrpc(apply_error_);
  // Checked before anything is queued or applied, in both modes: a bad
  // piece is refused to its sender and changes nothing.
  if (Status st = CheckGradients(grads); !st.ok()) return ToGrpc(st);
  if (mode_ != TrainMode::kSync) {
    const int64_t staleness = global_step_ - header.step();
    if (max_staleness_ < 0 || staleness <= max_staleness_) {
      if (Status st = ApplyGradients(grads, 1.0f); !st.ok()) return ToGrpc(st);
      ++global_step_;
      step_cv_.notify_all();
      *applied = true;
    }
    *global_step = global_step_;
    return grpc::Status::OK;
  }
  // Sync: gradients of an applied step, or a second push of one worker for
  // the current step, are stale.
  const bool fresh = header.step() == global_step_ &&
                     std::find(pending_workers_.begin(), pending_workers_.end(),
                               worker) == pending_workers_.end();
  if (fresh) {
    pending_.push_back(std::move(grads));
    pending_workers_.push_back(worker);
    *applied = true;
    if (int(pending_.size()) >= RequiredLocked()) ApplyPendingLocked();
  }
  *global_step = global_step_;
  return grpc::Status::OK;
}

grpc::Status PsService::Push(grpc::ServerContext* context,
                             grpc::ServerReader<rpc::PushMessage>* reader,
                             rpc::PushResponse* response) {
  if (grpc::Status st = CheckCall(*context, options_.credentials); !st.ok()) {
    return st;
  }
  rpc::PushMessage message;
  if (!reader->Read(&message) || !message.has_header()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "a push starts with its header");
  }
  const rpc::PushMessage::Header header = message.header();
  std::vector<rpc::TensorPiece> grads;
  do {
    for (rpc::TensorPiece& piece : *message.mutable_gradients()) {
      grads.push_back(std::move(piece));
    }
  } while (reader->Read(&message));
  bool applied = false;
  int64_t step = 0;
  grpc::Status st = AcceptPush(header, std::move(grads), &applied, &step);
  response->set_applied(applied);
  response->set_global_step(step);
  return st;
}

grpc::Status PsService::Step(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<rpc::PullMessage, rpc::StepMessage>* stream) {
  if (grpc::Status st = CheckCall(*context, options_.credentials); !st.ok()) {
    return st;
  }
  rpc::StepMessage first;
  if (!stream->Read(&first)) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "a step call starts with its push and pull");
  }
  std::vector<rpc::TensorPiece> grads;
  TakeGradients(&first, &grads);
  for (rpc::StepMessage more; stream->Read(&more);) {
    TakeGradients(&more, &grads);
  }
  rpc::PullMessage header;
  std::vector<rpc::TensorPiece> pieces;
  if (grpc::Status st = RunStep(context, first, std::move(grads),
                                header.mutable_header(), &pieces);
      !st.ok()) {
    return st;
  }
  return WritePieces(stream, std::move(header), &pieces);
}

grpc::Status PsService::StepOnce(grpc::ServerContext* context,
                                 const rpc::StepMessage* request,
                                 rpc::PullMessage* response) {
  if (grpc::Status st = CheckCall(*context, options_.credentials); !st.ok()) {
    return st;
  }
  // The request is this call's own, unused after it: its gradients are
  // moved out rather than copied.
  auto* owned = const_cast<rpc::StepMessage*>(request);
  std::vector<rpc::TensorPiece> grads;
  TakeGradients(owned, &grads);
  std::vector<rpc::TensorPiece> pieces;
  if (grpc::Status st = RunStep(context, *owned, std::move(grads),
                                response->mutable_header(), &pieces);
      !st.ok()) {
    return st;
  }
  for (rpc::TensorPiece& piece : pieces) {
    *response->add_pieces() = std::move(piece);
  }
  return grpc::Status::OK;
}

grpc::Status PsService::RunStep(grpc::ServerContext* context,
                                const rpc::StepMessage& first,
                                std::vector<rpc::TensorPiece> grads,
                                rpc::PullHeader* header,
                                std::vector<rpc::TensorPiece>* pieces) {
  int64_t step = 0;
  if (first.has_push()) {
    bool applied = false;
    grpc::Status st =
        AcceptPush(first.push(), std::move(grads), &applied, &step);
    if (!st.ok()) return st;
    header->set_applied(applied);
  }
  header->set_global_step(step);
  if (first.has_pull()) return Gather(context, first.pull(), pieces, header);
  return grpc::Status::OK;
}

grpc::Status PsService::WorkerDone(grpc::ServerContext* context,
                                   const rpc::WorkerDoneRequest* request,
                                   rpc::WorkerDoneResponse*) {
  if (grpc::Status st = CheckCall(*context, options_.credentials); !st.ok()) {
    return st;
  }
  std::lock_guard<std::mutex> lock(mu_);
  const int w = request->worker();
  if (w >= 0 && w < options_.num_workers) done_[size_t(w)] = true;
  if (!pending_.empty() && int(pending_.size()) >= RequiredLocked()) {
    ApplyPendingLocked();
  }
  step_cv_.notify_all();
  return grpc::Status::OK;
}

grpc::Status PsService::Shutdown(grpc::ServerContext* context,
                                 const rpc::ShutdownRequest* request,
                                 rpc::ShutdownResponse*) {
  if (grpc::Status st = CheckCall(*context, options_.credentials); !st.ok()) {
    return st;
  }
  std::lock_guard<std::mutex> lock(mu_);
  shutdown_ = true;
  shutdown_reason_ = request->reason();
  step_cv_.notify_all();
  return grpc::Status::OK;
}

void PsService::Tick() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!pending_.empty() && int(pending_.size()) >= RequiredLocked()) {
    ApplyPendingLocked();
  }
}

bool PsService::WaitForShutdown(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  step_cv_.wait_for(lock, timeout, [&] { return shutdown_; });
  return shutdown_;
}

std::string PsService::shutdown_reason() const {
  std::lock_guard<std::mutex> lock(mu_);
  return shutdown_reason_;
}

int64_t PsService::global_step() const {
  std::lock_guard<std::mutex> lock(mu_);
  return global_step_;
}

}  // namespace dtf::runtime
