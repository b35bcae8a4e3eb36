// PsService's Session stream on gRPC: a worker's steps, pushes and pulls
// on one long-lived stream, read and written in wire format
// (ps_session_step.h).
#include <utility>

#include "grpcpp/support/method_handler.h"
#include "lib/base/strings.h"
#include "lib/rpc/call.h"
#include "lib/runtime/ps/ps_messages.h"
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
  rpc::StepMessage first, message;
  bool started = false;
  SessionStep step;
  while (stream->Read(&in)) {
    rpc::StepMessage* into = started ? &message : &first;
    if (Status st = step.Add(in, into); !st.ok()) return rpc::ToGrpc(st);
    started = true;
    if (into->more()) continue;
    // The step's last message: its push is applied, its pull answered.
    started = false;
    rpc::PullMessage header;
    WireSink sink;
    Status st = RunStep(*store_, first, step.views(), header.mutable_header(),
                        sink, cancelled);
    step.Clear();
    if (!st.ok()) return rpc::ToGrpc(st);
    for (const grpc::ByteBuffer& answer : sink.Finish(header)) {
      if (!stream->Write(answer)) {
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "client went away");
      }
    }
  }
  return grpc::Status::OK;
}

}  // namespace dtf::runtime
