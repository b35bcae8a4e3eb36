#include "lib/runtime/ps/ps_client.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <tuple>

#include "lib/base/strings.h"
#include "lib/base/task_name.h"
#include "lib/runtime/ps/ps_messages.h"
#include "lib/runtime/ps/ps_stream.h"
#include "lib/runtime/ps/ps_tls_stream.h"
#include "lib/runtime/ps/tensor_pieces.h"
#include "lib/runtime/ps/tensor_wire.h"

namespace dtf::runtime {

namespace {

// ps:<p>, the task that serves shard `p`.
TaskName PsName(size_t p) { return TaskName{Role::kPs, static_cast<int>(p)}; }

// "ps:<p> (host:port)": how errors name shard `p`'s server.
std::string PsWhere(size_t p, const std::vector<std::string>& addresses) {
  return StrCat(PsName(p).ToString(), " (", addresses[p], ")");
}

}  // namespace

PsClient::PsClient(const std::vector<std::string>& addresses,
                   RunCredentials creds, int worker,
                   std::chrono::milliseconds timeout,
                   const std::atomic<bool>* cancel)
    : addresses_(addresses),
      creds_(std::move(creds)),
      worker_(worker),
      cancel_(cancel),
      timeout_(timeout),
      partition_{int(addresses.size())},
      steps_(addresses.size(), 0),
      fanout_(int(addresses.size())) {
  for (size_t p = 0; p < addresses.size(); ++p) {
    std::shared_ptr<grpc::Channel> channel =
        MakeChannel(addresses[p], rpc::ForTask(creds_, PsName(p).DirName()));
    stubs_.push_back(rpc::ParameterServer::NewStub(channel));
    // With TLS, steps leave gRPC for a stream of dtf's own under the same
    // mutual TLS: gRPC's secure endpoint costs a synchronous round trip
    // far more than the cipher does (docs/protocol.md, "Session over
    // TLS").
    if (creds_.tls.on()) {
      streams_.push_back(std::make_unique<PsTlsStream>(
          stubs_.back().get(), addresses[p], PsName(p).DirName(), creds_,
          timeout_, PsWhere(p, addresses), cancel));
    } else {
      streams_.push_back(std::make_unique<PsStream>(
          channel, creds_, timeout_, PsWhere(p, addresses), cancel));
    }
  }
}

namespace {

// Copies a pulled piece into the output it belongs to; `row` is scratch.
Status Place(const WirePiece& piece,
             const std::vector<PsClient::DenseVar>& dense,
             const std::vector<PsClient::SparseVar>& sparse,
             std::vector<float>* row) {
  const int64_t cols = PieceCols(piece.shape);
  DTF_RETURN_IF_ERROR(CheckWirePiece(piece, cols));
  // The variable's values, or the slot the piece names.
  auto target = [&](kernels::Tensor* value,
                    kernels::OptimizerState* state) -> kernels::Tensor* {
    if (piece.slot.empty()) return value;
    kernels::Tensor* slot =
        state == nullptr ? nullptr : state->FindSlot(piece.slot);
    return slot != nullptr && slot->size() == value->size() ? slot : nullptr;
  };
  auto dense_it = std::find_if(dense.begin(), dense.end(),
                               [&](auto& v) { return v.name == piece.name; });
  if (dense_it != dense.end()) {
    kernels::Tensor* out = target(dense_it->out, dense_it->state);
    if (out == nullptr) {
      return DataLossError(
          StrCat("unexpected slot ", piece.slot, " of ", piece.name));
    }
    // Rows and offset come from the wire: checked without overflow.
    const int64_t rows_left =
        cols == 0 ? 0 : out->size() / cols - piece.row_offset;
    if (piece.row_offset < 0 || piece.ids.size() > 0 ||
        (cols > 0 && piece.rows > rows_left)) {
      return DataLossError(StrCat("bad rows for ", piece.name));
    }
    piece.values.CopyTo(out->data() + piece.row_offset * cols);
    return OkStatus();
  }
  auto sparse_it = std::find_if(sparse.begin(), sparse.end(),
                                [&](auto& v) { return v.name == piece.name; });
  if (sparse_it == sparse.end() || cols != sparse_it->cols) {
    return DataLossError(StrCat("unexpected variable ", piece.name));
  }
  kernels::Tensor* out = target(sparse_it->out, sparse_it->state);
  if (out == nullptr) {
    return DataLossError(
        StrCat("unexpected slot ", piece.slot, " of ", piece.name));
  }
  row->resize(piece.ids.size() * size_t(cols));
  piece.values.CopyTo(row->data());
  for (size_t i = 0; i < piece.ids.size(); ++i) {
    const int64_t id = piece.ids[i];
    int64_t at;
    if (sparse_it->all) {
      at = id;
    } else {
      auto pos =
          std::lower_bound(sparse_it->ids->begin(), sparse_it->ids->end(), id);
      at = pos - sparse_it->ids->begin();
      if (pos == sparse_it->ids->end() || *pos != id) at = -1;
    }
    if (at < 0 || at >= sparse_it->out->rows()) {
      return DataLossError(
          StrCat("row ", id, " of ", piece.name, " was not asked for"));
    }
    std::memcpy(out->data() + at * cols, row->data() + i * cols,
                size_t(cols) * 4);
  }
  return OkStatus();
}

// The part of a pull that PS `p` of `partition` answers.
void FillPullRequest(const std::vector<PsClient::DenseVar>& dense,
                     const std::vector<PsClient::SparseVar>& sparse, int p,
                     const Partition& partition, rpc::PullRequest* request) {
  for (const PsClient::DenseVar& v : dense) request->add_dense(v.name);
  for (const PsClient::SparseVar& v : sparse) {
    auto* s = request->add_sparse();
    s->set_name(v.name);
    s->set_all(v.all);
    if (v.all) continue;
    for (int64_t id : *v.ids) {
      if (partition.Owner(id) == p) s->add_ids(id);
    }
  }
}

void ResizeSparse(const std::vector<PsClient::SparseVar>& sparse) {
  for (const PsClient::SparseVar& v : sparse) {
    v.out->Resize({v.all ? v.rows : int64_t(v.ids->size()), v.cols});
  }
}

// A step's messages on the Session stream: `head` (its push header and
// pull request) and the gradient pieces, their values moved into the
// messages' slices, packed into messages of about kMaxStreamMessageBytes.
std::vector<grpc::ByteBuffer> StepMessages(
    const rpc::StepMessage& head, std::vector<rpc::TensorPiece>* grads) {
  static const std::string* const kMore = [] {
    rpc::StepMessage more;
    more.set_more(true);
    return new std::string(more.SerializeAsString());
  }();
  std::vector<grpc::ByteBuffer> messages;
  WireWriter writer;
  writer.AppendSerialized(head.SerializeAsString());
  for (rpc::TensorPiece& piece : *grads) {
    const int64_t size = int64_t(piece.values().size());
    if (writer.size() > 0 && writer.size() + size > kMaxStreamMessageBytes) {
      writer.AppendSerialized(*kMore);
      messages.push_back(writer.Finish());
    }
    grpc::Slice values = SliceOwning(std::move(*piece.mutable_values()));
    piece.clear_values();
    writer.AppendPiece(kStepGradientsField, piece, std::move(values));
  }
  messages.push_back(writer.Finish());
  return messages;
}

// One exchange on `stream`: the step `head` with `grads`, its answer's
// pieces placed into `dense` and `sparse`, its header into `header`.
Status Exchange(SessionStream* stream, const rpc::StepMessage& head,
                std::vector<rpc::TensorPiece>* grads,
                const std::vector<PsClient::DenseVar>& dense,
                const std::vector<PsClient::SparseVar>& sparse,
                const std::string& what, rpc::PullHeader* header) {
  std::vector<float> row;
  std::string rest;
  rpc::PullMessage message;
  return stream->Exchange(
      StepMessages(head, grads),
      [&](const grpc::ByteBuffer& answer, bool* more) -> Status {
        rest.clear();
        Status placed;
        // A piece that cannot be placed is reported once the answer was
        // read whole.
        Status st = DecodePieces(answer, kPullPiecesField, &rest,
                                 [&](const WirePiece& piece) {
                                   if (placed.ok()) {
                                     placed = Place(piece, dense, sparse, &row);
                                   }
                                   return OkStatus();
                                 });
        message.Clear();
        if (st.ok() && !message.ParseFromString(rest)) {
          st = DataLossError("malformed answer header");
        }
        *more = message.more();
        if (message.has_header()) *header = message.header();
        if (st.ok()) st = placed;
        if (!st.ok()) {
          return Status(st.code(), ToAbsl(StrCat(what, ": ", Message(st))));
        }
        return OkStatus();
      });
}

Status FirstError(const std::vector<Status>& statuses) {
  for (const Status& st : statuses) {
    if (!st.ok()) return st;
  }
  return OkStatus();
}

// For each worker the earliest of the positions the parameter servers
// reported (in `reports`, one a PS); nullopt where none did.
template <typename Report>
WorkerPositions EarliestPositions(const std::vector<Report>& reports) {
  WorkerPositions earliest;
  for (const Report& r : reports) {
    const WorkerPositions positions = WorkerPositionsOf(r.worker_positions());
    if (earliest.size() < positions.size()) earliest.resize(positions.size());
    for (size_t w = 0; w < positions.size(); ++w) {
      if (!positions[w]) continue;
      const InputPosition& p = *positions[w];
      std::optional<InputPosition>& e = earliest[w];
      if (!e || PositionNumbers(p) < PositionNumbers(*e)) {
        e = p;
      }
    }
  }
  return earliest;
}

}  // namespace

Status PsClient::Pull(const std::vector<DenseVar>& dense,
                      const std::vector<SparseVar>& sparse, int64_t min_step,
                      bool slots) {
  ResizeSparse(sparse);
  std::vector<Status> statuses(static_cast<size_t>(num_ps()));
  std::vector<rpc::PullHeader> headers(static_cast<size_t>(num_ps()));
  fanout_.Run([&](int p) {
    const std::string what = PsWhere(size_t(p), addresses_);
    rpc::StepMessage head;
    rpc::PullRequest* request = head.mutable_pull();
    request->set_worker(worker_);
    request->set_min_step(min_step);
    request->set_slots(slots);
    FillPullRequest(dense, sparse, p, partition_, request);
    std::vector<rpc::TensorPiece> none;
    rpc::PullHeader& header = headers[size_t(p)];
    statuses[size_t(p)] = Exchange(streams_[size_t(p)].get(), head, &none,
                                   dense, sparse, what, &header);
    steps_[size_t(p)] = header.global_step();
  });
  DTF_RETURN_IF_ERROR(FirstError(statuses));
  // A variable's update count is the largest of its parts'.
  auto set_step = [&](const std::string& name, kernels::OptimizerState* s) {
    if (s == nullptr) return;
    int64_t step = 0;
    for (const rpc::PullHeader& h : headers) {
      auto it = h.slot_steps().find(name);
      if (it != h.slot_steps().end()) step = std::max(step, it->second);
    }
    s->set_step(step);
  };
  if (slots) {
    for (const DenseVar& v : dense) set_step(v.name, v.state);
    for (const SparseVar& v : sparse) set_step(v.name, v.state);
    positions_ = EarliestPositions(headers);
  }
  return OkStatus();
}

StatusOr<PsClient::PushResult> PsClient::Push(
    std::vector<std::vector<rpc::TensorPiece>> pieces, int64_t examples,
    double loss) {
  // A push alone leaves steps() as they were.
  std::vector<int64_t> steps = steps_;
  StatusOr<PushResult> result =
      Step(std::move(pieces), examples, loss, nullptr, nullptr, false);
  steps_ = std::move(steps);
  return result;
}

StatusOr<PsClient::PushResult> PsClient::Step(
    std::vector<std::vector<rpc::TensorPiece>> pieces, int64_t examples,
    double loss, const std::vector<DenseVar>* dense,
    const std::vector<SparseVar>* sparse, bool sync,
    const std::optional<InputPosition>& position, int shard) {
  const bool pull = dense != nullptr || sparse != nullptr;
  const std::vector<DenseVar> no_dense;
  const std::vector<SparseVar> no_sparse;
  if (dense == nullptr) dense = &no_dense;
  if (sparse == nullptr) sparse = &no_sparse;
  ResizeSparse(*sparse);
  std::vector<Status> statuses(static_cast<size_t>(num_ps()));
  std::vector<rpc::PullHeader> headers(static_cast<size_t>(num_ps()));
  // Sync mode: one step for every PS, the smallest this worker saw. Each
  // PS's own step as last seen could differ by one where another worker
  // left (WorkerDone) between the replies; the push would then be fresh
  // on one PS and stale on another, and the shards would end at different
  // steps. With the smallest, a PS that is ahead drops it and one that is
  // behind applies it: they meet again.
  const int64_t common =
      steps_.empty() ? 0 : *std::min_element(steps_.begin(), steps_.end());
  fanout_.Run([&](int p) {
    const std::string what = PsWhere(size_t(p), addresses_);
    const int64_t step = sync ? common : steps_[size_t(p)];
    rpc::StepMessage head;
    auto* push = head.mutable_push();
    push->set_worker(worker_);
    push->set_step(step);
    push->set_examples(examples);
    push->set_loss(loss);
    if (position) {
      for (const int64_t n : PositionNumbers(*position)) {
        push->add_input_position(n);
      }
      if (shard >= 0) push->set_input_shard(shard);
    }
    if (pull) {
      rpc::PullRequest* request = head.mutable_pull();
      request->set_worker(worker_);
      request->set_min_step(sync ? step + 1 : 0);
      FillPullRequest(*dense, *sparse, p, partition_, request);
    }
    rpc::PullHeader& header = headers[size_t(p)];
    statuses[size_t(p)] =
        Exchange(streams_[size_t(p)].get(), head, &pieces[size_t(p)], *dense,
                 *sparse, what, &header);
    steps_[size_t(p)] = header.global_step();
  });
  DTF_RETURN_IF_ERROR(FirstError(statuses));
  PushResult result;
  for (const rpc::PullHeader& header : headers) {
    result.applied = result.applied && header.applied();
    result.global_step = std::max(result.global_step, header.global_step());
  }
  return result;
}

StatusOr<std::vector<rpc::SaveShardResponse>> PsClient::SaveShards(
    const std::string& prefix, int num_shards, int64_t min_step,
    std::chrono::milliseconds timeout, bool variables_only) {
  std::vector<Status> statuses(static_cast<size_t>(num_ps()));
  std::vector<rpc::SaveShardResponse> responses(static_cast<size_t>(num_ps()));
  fanout_.Run([&](int p) {
    auto context = MakeClientContext(creds_, timeout);
    rpc::SaveShardRequest request;
    request.set_prefix(prefix);
    request.set_shard(p);
    request.set_num_shards(num_shards);
    request.set_min_step(min_step);
    request.set_worker(worker_);
    request.set_variables_only(variables_only);
    rpc::SaveShardResponse& response = responses[size_t(p)];
    statuses[size_t(p)] = FromGrpc(
        stubs_[size_t(p)]->SaveShard(context.get(), request, &response),
        StrCat(PsWhere(size_t(p), addresses_), ": SaveShard of ", prefix));
    if (statuses[size_t(p)].ok()) steps_[size_t(p)] = response.global_step();
  });
  DTF_RETURN_IF_ERROR(FirstError(statuses));
  positions_ = EarliestPositions(responses);
  return responses;
}

Status PsClient::WorkerDone() {
  const bool stopping = cancel_ != nullptr && cancel_->load();
  Status first;
  for (int p = 0; p < num_ps(); ++p) {
    auto context = MakeClientContext(
        creds_, stopping ? std::chrono::milliseconds(1000) : timeout_);
    if (stopping) context->set_wait_for_ready(false);
    rpc::WorkerDoneRequest request;
    request.set_worker(worker_);
    rpc::WorkerDoneResponse response;
    Status st = FromGrpc(
        stubs_[size_t(p)]->WorkerDone(context.get(), request, &response),
        StrCat(PsWhere(size_t(p), addresses_), ": WorkerDone"));
    // Every PS is told, even when one fails.
    if (first.ok()) first = st;
  }
  return first;
}

Status PsClient::Shutdown(const std::string& reason) {
  // This client's streams end first: a PS ends once its calls did.
  for (auto& stream : streams_) stream->End();
  Status first;
  for (int p = 0; p < num_ps(); ++p) {
    auto context = MakeClientContext(creds_, std::chrono::seconds(10));
    context->set_wait_for_ready(false);
    rpc::ShutdownRequest request;
    request.set_reason(reason);
    rpc::ShutdownResponse response;
    Status st =
        FromGrpc(stubs_[size_t(p)]->Shutdown(context.get(), request, &response),
                 StrCat(PsWhere(size_t(p), addresses_), ": Shutdown"));
    if (st.code() == StatusCode::kUnavailable ||
        st.code() == StatusCode::kCancelled) {
      continue;  // gone, or going
    }
    if (first.ok()) first = st;
  }
  return first;
}

void PsClient::NotAfter(std::chrono::steady_clock::time_point t) {
  using std::chrono::system_clock;
  const auto now = std::chrono::steady_clock::now();
  const system_clock::time_point at =
      t == std::chrono::steady_clock::time_point::max()
          ? system_clock::time_point::max()
          : system_clock::now() +
                std::chrono::duration_cast<system_clock::duration>(
                    std::max(t, now) - now);
  for (auto& stream : streams_) stream->set_not_after(at);
}

}  // namespace dtf::runtime
