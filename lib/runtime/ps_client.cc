#include "lib/runtime/ps_client.h"

#include <algorithm>
#include <cstring>

#include "lib/base/strings.h"
#include "lib/runtime/tensor_pieces.h"

namespace dtf::runtime {

PsClient::PsClient(const std::vector<std::string>& addresses,
                   RunCredentials creds, int worker,
                   std::chrono::milliseconds timeout)
    : addresses_(addresses),
      creds_(std::move(creds)),
      worker_(worker),
      timeout_(timeout),
      partition_{int(addresses.size())},
      steps_(addresses.size(), 0),
      fanout_(int(addresses.size())) {
  for (const std::string& a : addresses) {
    stubs_.push_back(rpc::ParameterServer::NewStub(MakeChannel(a)));
  }
}

namespace {

// Copies a pulled piece into the output it belongs to.
Status Place(const rpc::TensorPiece& piece,
             const std::vector<PsClient::DenseVar>& dense,
             const std::vector<PsClient::SparseVar>& sparse,
             const std::string& what, std::vector<float>* row) {
  const int64_t cols = PieceCols({piece.shape().begin(), piece.shape().end()});
  // The variable's values, or the slot the piece names.
  auto target = [&](kernels::Tensor* value,
                    kernels::OptimizerState* state) -> kernels::Tensor* {
    if (piece.slot().empty()) return value;
    kernels::Tensor* slot =
        state == nullptr ? nullptr : state->FindSlot(piece.slot());
    return slot != nullptr && slot->size() == value->size() ? slot : nullptr;
  };
  auto dense_it = std::find_if(dense.begin(), dense.end(),
                               [&](auto& v) { return v.name == piece.name(); });
  if (dense_it != dense.end()) {
    kernels::Tensor* out = target(dense_it->out, dense_it->state);
    if (out == nullptr) {
      return DataLossError(StrCat(what, ": unexpected slot ", piece.slot(),
                                  " of ", piece.name()));
    }
    if (piece.row_offset() < 0 ||
        (piece.row_offset() + piece.rows()) * cols > out->size()) {
      return DataLossError(StrCat(what, ": bad rows for ", piece.name()));
    }
    return ReadPiece(piece, cols, out->data() + piece.row_offset() * cols);
  }
  auto sparse_it = std::find_if(sparse.begin(), sparse.end(), [&](auto& v) {
    return v.name == piece.name();
  });
  if (sparse_it == sparse.end() || cols != sparse_it->cols) {
    return DataLossError(StrCat(what, ": unexpected variable ", piece.name()));
  }
  kernels::Tensor* out = target(sparse_it->out, sparse_it->state);
  if (out == nullptr) {
    return DataLossError(
        StrCat(what, ": unexpected slot ", piece.slot(), " of ", piece.name()));
  }
  row->resize(size_t(piece.ids_size() * cols));
  DTF_RETURN_IF_ERROR(ReadPiece(piece, cols, row->data()));
  for (int i = 0; i < piece.ids_size(); ++i) {
    const int64_t id = piece.ids(i);
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
      return DataLossError(StrCat(what, ": row ", id, " of ", piece.name(),
                                  " was not asked for"));
    }
    std::memcpy(out->data() + at * cols, row->data() + i * cols,
                size_t(cols) * 4);
  }
  return OkStatus();
}

}  // namespace

namespace {

constexpr int64_t kMaxVarintBytes = 10;

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

// Header and pieces of the messages on a stream `reader`, each placed.
template <typename Reader>
Status ReadPulled(Reader* reader, const std::vector<PsClient::DenseVar>& dense,
                  const std::vector<PsClient::SparseVar>& sparse,
                  const std::string& what, rpc::PullHeader* header) {
  rpc::PullMessage message;
  std::vector<float> row;
  Status placed;
  while (reader->Read(&message)) {
    if (message.has_header()) *header = message.header();
    for (const rpc::TensorPiece& piece : message.pieces()) {
      if (placed.ok()) placed = Place(piece, dense, sparse, what, &row);
    }
  }
  return placed;
}

// Appends pieces to `message` and writes full messages of at most
// kMaxPieceBytes; the last one is left in `message` to be written by the
// caller.
template <typename Writer, typename Message, typename Add>
bool WritePacked(Writer* writer, std::vector<rpc::TensorPiece>* pieces,
                 Message* message, Add add) {
  bool ok = true;
  int64_t bytes = 0;
  for (rpc::TensorPiece& piece : *pieces) {
    const int64_t size = int64_t(piece.values().size());
    if (bytes > 0 && bytes + size > kMaxPieceBytes) {
      ok = ok && writer->Write(*message);
      message->Clear();
      bytes = 0;
    }
    *add(message) = std::move(piece);
    bytes += size;
  }
  return ok;
}

// An upper bound of the bytes PS `p` sends back for `request` (its part of a
// pull of `dense` and `sparse`, in their order): values, and ids at their
// longest varint.
int64_t PullBytes(const rpc::PullRequest& request,
                  const std::vector<PsClient::DenseVar>& dense,
                  const std::vector<PsClient::SparseVar>& sparse, int p,
                  const Partition& partition) {
  int64_t bytes = 0;
  for (const PsClient::DenseVar& v : dense) {
    const int64_t rows = v.out->shape().empty() ? 1 : v.out->shape()[0];
    auto [b, e] = partition.DenseRange(rows, p);
    bytes += (e - b) * (v.out->size() / std::max<int64_t>(rows, 1)) * 4;
  }
  for (int i = 0; i < request.sparse_size(); ++i) {
    const PsClient::SparseVar& v = sparse[size_t(i)];
    const int64_t n =
        v.all ? partition.SparseRows(v.rows, p) : request.sparse(i).ids_size();
    bytes += n * (v.cols * 4 + kMaxVarintBytes);
  }
  return bytes;
}

Status FirstError(const std::vector<Status>& statuses) {
  for (const Status& st : statuses) {
    if (!st.ok()) return st;
  }
  return OkStatus();
}

}  // namespace

Status PsClient::Pull(const std::vector<DenseVar>& dense,
                      const std::vector<SparseVar>& sparse, int64_t min_step,
                      bool slots) {
  ResizeSparse(sparse);
  std::vector<Status> statuses(static_cast<size_t>(num_ps()));
  std::vector<rpc::PullHeader> headers(static_cast<size_t>(num_ps()));
  fanout_.Run([&](int p) {
    const std::string what = StrCat("ps:", p, " (", addresses_[size_t(p)], ")");
    rpc::PullRequest request;
    request.set_worker(worker_);
    request.set_min_step(min_step);
    request.set_slots(slots);
    FillPullRequest(dense, sparse, p, partition_, &request);
    auto context = MakeClientContext(creds_, timeout_);
    auto reader = stubs_[size_t(p)]->Pull(context.get(), request);
    rpc::PullHeader header;
    Status placed = ReadPulled(reader.get(), dense, sparse, what, &header);
    Status st = FromGrpc(reader->Finish(), StrCat(what, ": Pull"));
    if (st.ok()) st = placed;
    steps_[size_t(p)] = header.global_step();
    statuses[size_t(p)] = st;
    headers[size_t(p)] = std::move(header);
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
  }
  return OkStatus();
}

StatusOr<PsClient::PushResult> PsClient::Push(
    std::vector<std::vector<rpc::TensorPiece>> pieces, int64_t examples,
    double loss) {
  std::vector<Status> statuses(static_cast<size_t>(num_ps()));
  std::vector<rpc::PushResponse> responses(static_cast<size_t>(num_ps()));
  fanout_.Run([&](int p) {
    const std::string what = StrCat("ps:", p, " (", addresses_[size_t(p)], ")");
    auto context = MakeClientContext(creds_, timeout_);
    auto writer = stubs_[size_t(p)]->Push(context.get(), &responses[size_t(p)]);
    rpc::PushMessage message;
    auto* header = message.mutable_header();
    header->set_worker(worker_);
    header->set_step(steps_[size_t(p)]);
    header->set_examples(examples);
    header->set_loss(loss);
    // The header rides on the first message.
    bool ok =
        WritePacked(writer.get(), &pieces[size_t(p)], &message,
                    [](rpc::PushMessage* m) { return m->add_gradients(); });
    ok = ok && writer->Write(message, grpc::WriteOptions().set_last_message());
    (void)ok;  // a failed write shows in Finish
    statuses[size_t(p)] = FromGrpc(writer->Finish(), StrCat(what, ": Push"));
  });
  DTF_RETURN_IF_ERROR(FirstError(statuses));
  PushResult result;
  for (const rpc::PushResponse& response : responses) {
    result.applied = result.applied && response.applied();
    result.global_step = std::max(result.global_step, response.global_step());
  }
  return result;
}

StatusOr<PsClient::PushResult> PsClient::Step(
    std::vector<std::vector<rpc::TensorPiece>> pieces, int64_t examples,
    double loss, const std::vector<DenseVar>* dense,
    const std::vector<SparseVar>* sparse, bool sync) {
  const bool pull = dense != nullptr || sparse != nullptr;
  const std::vector<DenseVar> no_dense;
  const std::vector<SparseVar> no_sparse;
  if (dense == nullptr) dense = &no_dense;
  if (sparse == nullptr) sparse = &no_sparse;
  ResizeSparse(*sparse);
  std::vector<Status> statuses(static_cast<size_t>(num_ps()));
  std::vector<rpc::PullHeader> headers(static_cast<size_t>(num_ps()));
  fanout_.Run([&](int p) {
    const std::string what = StrCat("ps:", p, " (", addresses_[size_t(p)], ")");
    std::vector<rpc::TensorPiece>& grads = pieces[size_t(p)];
    rpc::StepMessage message;
    auto* push = message.mutable_push();
    push->set_worker(worker_);
    push->set_step(steps_[size_t(p)]);
    push->set_examples(examples);
    push->set_loss(loss);
    if (pull) {
      rpc::PullRequest* request = message.mutable_pull();
      request->set_worker(worker_);
      request->set_min_step(sync ? steps_[size_t(p)] + 1 : 0);
      FillPullRequest(*dense, *sparse, p, partition_, request);
    }
    // Values, and ids at their longest varint, of the request.
    int64_t push_bytes = 0;
    for (const rpc::TensorPiece& piece : grads) {
      push_bytes +=
          int64_t(piece.values().size()) + piece.ids_size() * kMaxVarintBytes;
    }
    for (const auto& s : message.pull().sparse()) {
      push_bytes += s.ids_size() * kMaxVarintBytes;
    }
    auto context = MakeClientContext(creds_, timeout_);
    Status st;
    if (push_bytes <= kMaxUnaryBytes &&
        PullBytes(message.pull(), *dense, *sparse, p, partition_) <=
            kMaxUnaryBytes) {
      for (rpc::TensorPiece& piece : grads) {
        *message.add_gradients() = std::move(piece);
      }
      rpc::PullMessage response;
      st = FromGrpc(
          stubs_[size_t(p)]->StepOnce(context.get(), message, &response),
          StrCat(what, ": Step"));
      std::vector<float> row;
      for (const rpc::TensorPiece& piece : response.pieces()) {
        if (st.ok()) st = Place(piece, *dense, *sparse, what, &row);
      }
      headers[size_t(p)] = response.header();
    } else {
      auto stream = stubs_[size_t(p)]->Step(context.get());
      bool ok =
          WritePacked(stream.get(), &grads, &message,
                      [](rpc::StepMessage* m) { return m->add_gradients(); });
      ok =
          ok && stream->Write(message, grpc::WriteOptions().set_last_message());
      (void)ok;  // a failed write shows in Finish
      Status placed =
          ReadPulled(stream.get(), *dense, *sparse, what, &headers[size_t(p)]);
      st = FromGrpc(stream->Finish(), StrCat(what, ": Step"));
      if (st.ok()) st = placed;
    }
    steps_[size_t(p)] = headers[size_t(p)].global_step();
    statuses[size_t(p)] = st;
  });
  DTF_RETURN_IF_ERROR(FirstError(statuses));
  PushResult result;
  for (const rpc::PullHeader& header : headers) {
    result.applied = result.applied && header.applied();
    result.global_step = std::max(result.global_step, header.global_step());
  }
  return result;
}

Status PsClient::WorkerDone() {
  for (int p = 0; p < num_ps(); ++p) {
    auto context = MakeClientContext(creds_, timeout_);
    rpc::WorkerDoneRequest request;
    request.set_worker(worker_);
    rpc::WorkerDoneResponse response;
    DTF_RETURN_IF_ERROR(FromGrpc(
        stubs_[size_t(p)]->WorkerDone(context.get(), request, &response),
        StrCat("ps:", p, " (", addresses_[size_t(p)], "): WorkerDone")));
  }
  return OkStatus();
}

Status PsClient::Shutdown(const std::string& reason) {
  Status first;
  for (int p = 0; p < num_ps(); ++p) {
    auto context = MakeClientContext(creds_, std::chrono::seconds(10));
    rpc::ShutdownRequest request;
    request.set_reason(reason);
    rpc::ShutdownResponse response;
    Status st =
        FromGrpc(stubs_[size_t(p)]->Shutdown(context.get(), request, &response),
                 StrCat("ps:", p, " (", addresses_[size_t(p)], "): Shutdown"));
    if (first.ok()) first = st;
  }
  return first;
}

}  // namespace dtf::runtime
