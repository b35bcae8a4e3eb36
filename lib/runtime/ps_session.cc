// PsService's Session stream: a worker's steps, pushes and pulls on one
// long-lived stream, its messages read and written in wire format
// (tensor_wire.h) rather than parsed into generated classes.
#include <utility>

#include "grpcpp/support/method_handler.h"
#include "lib/base/strings.h"
#include "lib/runtime/ps_service.h"
#include "lib/runtime/tensor_pieces.h"
#include "lib/runtime/tensor_wire.h"

namespace dtf::runtime {

namespace {

using RawStream = grpc::ServerReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>;

// A received gradient piece as the service's own type.
rpc::TensorPiece SessionPiece(const WirePiece& wire) {
  rpc::TensorPiece piece;
  piece.set_name(wire.name);
  piece.mutable_shape()->Add(wire.shape.begin(), wire.shape.end());
  piece.set_row_offset(wire.row_offset);
  piece.set_rows(wire.rows);
  piece.mutable_ids()->Add(wire.ids.begin(), wire.ids.end());
  piece.set_slot(wire.slot);
  std::string* values = piece.mutable_values();
  values->resize(wire.values.size());
  wire.values.CopyTo(values->data());
  return piece;
}

// Writes the answer `header` and `pieces` (their values moved into the
// messages' slices), packed into messages of about kMaxStreamMessageBytes.
bool WriteSessionAnswer(const rpc::PullMessage& header,
                        std::vector<rpc::TensorPiece>* pieces,
                        RawStream* stream) {
  static const std::string* const kMore = [] {
    rpc::PullMessage more;
    more.set_more(true);
    return new std::string(more.SerializeAsString());
  }();
  WireWriter writer;
  writer.AppendSerialized(header.SerializeAsString());
  for (rpc::TensorPiece& piece : *pieces) {
    const int64_t size = int64_t(piece.values().size());
    if (writer.size() > 0 && writer.size() + size > kMaxStreamMessageBytes) {
      writer.AppendSerialized(*kMore);
      if (!stream->Write(writer.Finish())) return false;
    }
    grpc::Slice values = SliceOwning(std::move(*piece.mutable_values()));
    piece.clear_values();
    writer.AppendPiece(kPullPiecesField, piece, std::move(values));
  }
  return stream->Write(writer.Finish());
}

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
             RawStream* stream) { return service->Session(context, stream); },
          this));
  return true;
}

grpc::Status PsService::Session(grpc::ServerContext* context,
                                RawStream* stream) {
  if (grpc::Status st = CheckCall(*context, options_.credentials); !st.ok()) {
    return st;
  }
  grpc::ByteBuffer in;
  rpc::StepMessage first, message;
  bool started = false;
  std::vector<rpc::TensorPiece> grads;
  std::string rest;
  while (stream->Read(&in)) {
    rest.clear();
    Status st = DecodePieces(in, kStepGradientsField, &rest,
                             [&](const WirePiece& piece) {
                               grads.push_back(SessionPiece(piece));
                               return OkStatus();
                             });
    if (st.ok() && !message.ParseFromString(rest)) {
      st = DataLossError("malformed step message");
    }
    if (!st.ok()) return ToGrpc(st);
    const bool more = message.more();
    if (!started) {
      first.Swap(&message);
      started = true;
    }
    if (more) continue;
    // The step's last message: its push is applied, its pull answered.
    started = false;
    rpc::PullMessage header;
    std::vector<rpc::TensorPiece> pieces;
    grpc::Status done = RunStep(context, first, std::move(grads),
                                header.mutable_header(), &pieces);
    grads.clear();
    if (!done.ok()) return done;
    if (!WriteSessionAnswer(header, &pieces, stream)) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "client went away");
    }
  }
  return grpc::Status::OK;
}

}  // namespace dtf::runtime
