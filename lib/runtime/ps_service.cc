#include "lib/runtime/ps_service.h"

#include <utility>
#include <vector>

#include "lib/rpc/call.h"
#include "lib/runtime/ps_messages.h"
#include "lib/runtime/tensor_pieces.h"

namespace dtf::runtime {
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

std::function<bool()> CancelledOf(grpc::ServerContext* context) {
  return [context] { return context->IsCancelled(); };
}

}  // namespace

PsService::PsService(std::unique_ptr<ParamStore> store,
                     rpc::RunCredentials credentials)
    : store_(std::move(store)), credentials_(std::move(credentials)) {}

PsService::~PsService() = default;

StatusOr<std::unique_ptr<PsService>> PsService::Create(
    const JobFile& job, const PsOptions& options) {
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<ParamStore> store,
                       ParamStore::Create(job, options));
  return std::unique_ptr<PsService>(
      new PsService(std::move(store), options.credentials));
}

grpc::Status PsService::Pull(grpc::ServerContext* context,
                             const rpc::PullRequest* request,
                             grpc::ServerWriter<rpc::PullMessage>* writer) {
  if (grpc::Status st = rpc::CheckCall(*context, credentials_); !st.ok()) {
    return st;
  }
  std::vector<rpc::TensorPiece> pieces;
  TensorPieceSink sink(&pieces);
  rpc::PullMessage header;
  if (Status st = PullPieces(*store_, *request, header.mutable_header(), sink,
                             CancelledOf(context));
      !st.ok()) {
    return rpc::ToGrpc(st);
  }
  return WritePieces(writer, std::move(header), &pieces);
}

grpc::Status PsService::Push(grpc::ServerContext* context,
                             grpc::ServerReader<rpc::PushMessage>* reader,
                             rpc::PushResponse* response) {
  if (grpc::Status st = rpc::CheckCall(*context, credentials_); !st.ok()) {
    return st;
  }
  // The call's messages are kept as they came; the store reads the pieces
  // in them.
  std::vector<rpc::PushMessage> messages(1);
  if (!reader->Read(&messages[0]) || !messages[0].has_header()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "a push starts with its header");
  }
  for (rpc::PushMessage more; reader->Read(&more);) {
    messages.push_back(std::move(more));
  }
  std::vector<PieceView> grads;
  for (const rpc::PushMessage& m : messages) {
    AppendPieceViews(m.gradients(), &grads);
  }
  StatusOr<PushResult> r = PushGradients(*store_, messages[0].header(), grads);
  if (!r.ok()) return rpc::ToGrpc(r.status());
  response->set_applied(r->applied);
  response->set_global_step(r->global_step);
  return grpc::Status::OK;
}

grpc::Status PsService::Step(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<rpc::PullMessage, rpc::StepMessage>* stream) {
  if (grpc::Status st = rpc::CheckCall(*context, credentials_); !st.ok()) {
    return st;
  }
  std::vector<rpc::StepMessage> messages(1);
  if (!stream->Read(&messages[0])) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "a step call starts with its push and pull");
  }
  for (rpc::StepMessage more; stream->Read(&more);) {
    messages.push_back(std::move(more));
  }
  std::vector<PieceView> grads;
  for (const rpc::StepMessage& m : messages) {
    AppendPieceViews(m.gradients(), &grads);
  }
  rpc::PullMessage header;
  std::vector<rpc::TensorPiece> pieces;
  TensorPieceSink sink(&pieces);
  if (Status st = RunStep(*store_, messages[0], grads, header.mutable_header(),
                          sink, CancelledOf(context));
      !st.ok()) {
    return rpc::ToGrpc(st);
  }
  // The gradients are spent: their memory goes before the answer is sent.
  messages.clear();
  return WritePieces(stream, std::move(header), &pieces);
}

grpc::Status PsService::StepOnce(grpc::ServerContext* context,
                                 const rpc::StepMessage* request,
                                 rpc::PullMessage* response) {
  if (grpc::Status st = rpc::CheckCall(*context, credentials_); !st.ok()) {
    return st;
  }
  std::vector<PieceView> grads;
  AppendPieceViews(request->gradients(), &grads);
  std::vector<rpc::TensorPiece> pieces;
  TensorPieceSink sink(&pieces);
  if (Status st = RunStep(*store_, *request, grads, response->mutable_header(),
                          sink, CancelledOf(context));
      !st.ok()) {
    return rpc::ToGrpc(st);
  }
  for (rpc::TensorPiece& piece : pieces) {
    *response->add_pieces() = std::move(piece);
  }
  return grpc::Status::OK;
}

grpc::Status PsService::WorkerDone(grpc::ServerContext* context,
                                   const rpc::WorkerDoneRequest* request,
                                   rpc::WorkerDoneResponse*) {
  if (grpc::Status st = rpc::CheckCall(*context, credentials_); !st.ok()) {
    return st;
  }
  store_->WorkerDone(request->worker());
  return grpc::Status::OK;
}

grpc::Status PsService::Shutdown(grpc::ServerContext* context,
                                 const rpc::ShutdownRequest* request,
                                 rpc::ShutdownResponse*) {
  if (grpc::Status st = rpc::CheckCall(*context, credentials_); !st.ok()) {
    return st;
  }
  store_->Shutdown(request->reason());
  return grpc::Status::OK;
}

}  // namespace dtf::runtime
