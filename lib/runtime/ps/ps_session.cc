// PsService's Session stream: a worker's steps, pushes and pulls on one
// long-lived stream, read and written in wire format (tensor_wire.h). Pushed
// values reach the store as views of the received slices (copied only when
// a piece crosses slices); pulled values are written by the store straight
// into the answer's slices.
#include <deque>
#include <utility>

#include "grpcpp/support/method_handler.h"
#include "lib/base/strings.h"
#include "lib/rpc/call.h"
#include "lib/runtime/ps/ps_messages.h"
#include "lib/runtime/ps/ps_service.h"
#include "lib/runtime/ps/tensor_pieces.h"
#include "lib/runtime/ps/tensor_wire.h"

namespace dtf::runtime {

namespace {

using RawStream = grpc::ServerReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>;

// A gather's pieces written into wire messages of about
// kMaxStreamMessageBytes each.
class WireSink final : public PieceSink {
 public:
  std::byte* Piece(const PieceInfo& info) override {
    meta_.Clear();
    meta_.set_name(std::string(info.name));
    meta_.mutable_shape()->Add(info.shape.begin(), info.shape.end());
    if (info.ids.empty()) meta_.set_row_offset(info.row_offset);
    meta_.set_rows(info.rows);
    meta_.mutable_ids()->Add(info.ids.begin(), info.ids.end());
    if (!info.slot.empty()) meta_.set_slot(std::string(info.slot));
    const size_t bytes = size_t(info.rows * info.cols) * 4;
    if (writers_.back().size() > 0 &&
        writers_.back().size() + int64_t(bytes) > kMaxStreamMessageBytes) {
      writers_.emplace_back();
    }
    return reinterpret_cast<std::byte*>(
        writers_.back().AppendPieceSpace(kPullPiecesField, meta_, bytes));
  }

  // Writes the answer: `header` rides on the first message, `more` on all
  // but the last.
  bool Write(const rpc::PullMessage& header, RawStream* stream) {
    static const std::string* const kMore = [] {
      rpc::PullMessage more;
      more.set_more(true);
      return new std::string(more.SerializeAsString());
    }();
    writers_.front().AppendSerialized(header.SerializeAsString());
    for (size_t i = 0; i < writers_.size(); ++i) {
      if (i + 1 < writers_.size()) writers_[i].AppendSerialized(*kMore);
      if (!stream->Write(writers_[i].Finish())) return false;
    }
    return true;
  }

 private:
  std::deque<WireWriter> writers_ = std::deque<WireWriter>(1);
  rpc::TensorPiece meta_;
};

// One step's messages as they came, and views of their gradient pieces.
class SessionStep {
 public:
  // Takes one message; `message` receives its fields but the pieces. Values
  // that cross slices are gathered now, while later messages still travel.
  Status Add(const grpc::ByteBuffer& buffer, rpc::StepMessage* message) {
    std::vector<grpc::Slice>& slices = slices_.emplace_back();
    if (buffer.Valid() && !buffer.Dump(&slices).ok()) {
      return DataLossError("unreadable step message");
    }
    rest_.clear();
    DTF_RETURN_IF_ERROR(DecodePieces(slices, kStepGradientsField, &rest_,
                                     [&](const WirePiece& piece) {
                                       View(pieces_.emplace_back(piece));
                                       return OkStatus();
                                     }));
    if (!message->ParseFromString(rest_)) {
      return DataLossError("malformed step message");
    }
    return OkStatus();
  }

  // Views of every piece so far; valid until Clear.
  std::span<const PieceView> views() const { return views_; }

  void Clear() {
    slices_.clear();
    pieces_.clear();
    views_.clear();
    copies_ = 0;
  }

 private:
  void View(const WirePiece& p) {
    PieceView& v = views_.emplace_back();
    v.name = p.name;
    v.slot = p.slot;
    v.row_offset = p.row_offset;
    v.rows = p.rows;
    v.ids = p.ids;
    const char* at = p.values.Contiguous();
    if (at == nullptr) {
      // Across slices: gathered into a buffer kept for later steps.
      if (copies_ == copied_.size()) copied_.emplace_back();
      std::vector<std::byte>& copy = copied_[copies_++];
      copy.resize(p.values.size());
      p.values.CopyTo(copy.data());
      at = reinterpret_cast<const char*>(copy.data());
    }
    v.values = std::as_bytes(std::span<const char>(at, p.values.size()));
  }

  std::deque<std::vector<grpc::Slice>> slices_;
  std::deque<WirePiece> pieces_;
  std::vector<PieceView> views_;
  std::deque<std::vector<std::byte>> copied_;
  size_t copies_ = 0;
  std::string rest_;
};

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
    if (!sink.Write(header, stream)) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "client went away");
    }
  }
  return grpc::Status::OK;
}

}  // namespace dtf::runtime
