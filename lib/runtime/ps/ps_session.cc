// PsService's Session stream on gRPC: a worker's steps, pushes and pulls
// on one long-lived stream, read and written in wire format
// (ps_session_step.h).
#include <utility>

#include "grpcpp/support/method_handler.h"
#include "lib/base/strings.h"
#include "lib/rpc/call.h"
#include "lib/runtime/ps/ps_service.h"
#include "lib/runtime/ps/ps_session_step.h"

namespace dtf::runtime {

namespace {

using RawStream = grpc::ServerReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>;

}  // namespace

bool PsService::ServeRawSession() {
  // The generated service registers its methods in the proto's order.
  const int index = rpc::StepMessage::descriptor()
                        ->file()
                        ->FindServiceByName("ParameterServer")
                        ->FindMethodByName("Session")
                        ->index();
  MarkMethodStreamed(
      index,
      new grpc::internal::BidiStreamingHandler<PsService, grpc::ByteBuffer,
                                               grpc::ByteBuffer>(
          [](PsService* service, grpc::ServerContext* context,
             RawStream* stream) {
            return service->RawSession(context, stream);
          },
          this));
  return true;
}

grpc::Status PsService::RawSession(grpc::ServerContext* context,
                                   RawStream* stream) {
  if (grpc::Status st = rpc::CheckCall(*context, credentials_); !st.ok()) {
    return st;
  }
  auto cancelled = [context] { return context->IsCancelled(); };
  grpc::ByteBuffer in;
  SessionStep step;
  while (stream->Read(&in)) {
    StatusOr<bool> last = step.Take(in);
    if (!last.ok()) return rpc::ToGrpc(last.status());
    if (!*last) continue;
    // The step's last message: its push is applied, its pull answered.
    StatusOr<std::vector<grpc::ByteBuffer>> answer =
        step.Run(*store_, cancelled);
    if (!answer.ok()) return rpc::ToGrpc(answer.status());
    for (const grpc::ByteBuffer& message : *answer) {
      if (!stream->Write(message)) {
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "client went away");
      }
    }
  }
  return grpc::Status::OK;
}

}  // namespace dtf::runtime
