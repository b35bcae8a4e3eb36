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
      steps_(addresses.size(), 0) {
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
  auto dense_it = std::find_if(dense.begin(), dense.end(),
                               [&](auto& v) { return v.name == piece.name(); });
  if (dense_it != dense.end()) {
    kernels::Tensor* out = dense_it->out;
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
    std::memcpy(sparse_it->out->data() + at * cols, row->data() + i * cols,
                size_t(cols) * 4);
  }
  return OkStatus();
}

}  // namespace

Status PsClient::Pull(const std::vector<DenseVar>& dense,
                      const std::vector<SparseVar>& sparse, int64_t min_step) {
  for (const SparseVar& v : sparse) {
    v.out->Resize({v.all ? v.rows : int64_t(v.ids->size()), v.cols});
  }
  for (int p = 0; p < num_ps(); ++p) {
    const std::string what = StrCat("ps:", p, " (", addresses_[size_t(p)], ")");
    rpc::PullRequest request;
    request.set_worker(worker_);
    request.set_min_step(min_step);
    for (const DenseVar& v : dense) request.add_dense(v.name);
    for (const SparseVar& v : sparse) {
      auto* s = request.add_sparse();
      s->set_name(v.name);
      s->set_all(v.all);
      if (v.all) continue;
      for (int64_t id : *v.ids) {
        if (partition_.Owner(id) == p) s->add_ids(id);
      }
    }
    auto context = MakeClientContext(creds_, timeout_);
    auto reader = stubs_[size_t(p)]->Pull(context.get(), request);
    rpc::PullMessage message;
    std::vector<float> row;
    while (reader->Read(&message)) {
      if (message.has_header()) {
        steps_[size_t(p)] = message.header().global_step();
      }
      for (const rpc::TensorPiece& piece : message.pieces()) {
        DTF_RETURN_IF_ERROR(Place(piece, dense, sparse, what, &row));
      }
    }
    DTF_RETURN_IF_ERROR(FromGrpc(reader->Finish(), StrCat(what, ": Pull")));
  }
  return OkStatus();
}

StatusOr<PsClient::PushResult> PsClient::Push(
    std::vector<std::vector<rpc::TensorPiece>> pieces, int64_t examples,
    double loss) {
  PushResult result;
  for (int p = 0; p < num_ps(); ++p) {
    const std::string what = StrCat("ps:", p, " (", addresses_[size_t(p)], ")");
    auto context = MakeClientContext(creds_, timeout_);
    rpc::PushResponse response;
    auto writer = stubs_[size_t(p)]->Push(context.get(), &response);
    rpc::PushMessage message;
    auto* header = message.mutable_header();
    header->set_worker(worker_);
    header->set_step(steps_[size_t(p)]);
    header->set_examples(examples);
    header->set_loss(loss);
    // Pack the pieces into messages of at most kMaxPieceBytes each; the
    // header rides on the first.
    bool ok = true;
    int64_t bytes = 0;
    for (rpc::TensorPiece& piece : pieces[size_t(p)]) {
      const int64_t size = int64_t(piece.values().size());
      if (bytes > 0 && bytes + size > kMaxPieceBytes) {
        ok = ok && writer->Write(message);
        message.Clear();
        bytes = 0;
      }
      *message.add_gradients() = std::move(piece);
      bytes += size;
    }
    ok = ok && writer->Write(message, grpc::WriteOptions().set_last_message());
    DTF_RETURN_IF_ERROR(FromGrpc(writer->Finish(), StrCat(what, ": Push")));
    result.applied = result.applied && response.applied();
    result.global_step = std::max(result.global_step, response.global_step());
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
