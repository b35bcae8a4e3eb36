#include "lib/runtime/ps/ps_session_step.h"

#include <utility>

#include "lib/runtime/ps/ps_messages.h"
#include "lib/runtime/ps/tensor_pieces.h"

namespace dtf::runtime {

std::byte* WireSink::Piece(const PieceInfo& info) {
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

std::vector<grpc::ByteBuffer> WireSink::Finish(const rpc::PullMessage& header) {
  static const std::string* const kMore = [] {
    rpc::PullMessage more;
    more.set_more(true);
    return new std::string(more.SerializeAsString());
  }();
  writers_.front().AppendSerialized(header.SerializeAsString());
  std::vector<grpc::ByteBuffer> out;
  out.reserve(writers_.size());
  for (size_t i = 0; i < writers_.size(); ++i) {
    if (i + 1 < writers_.size()) writers_[i].AppendSerialized(*kMore);
    out.push_back(writers_[i].Finish());
  }
  return out;
}

Status SessionStep::Add(const grpc::ByteBuffer& buffer,
                        rpc::StepMessage* message) {
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

StatusOr<bool> SessionStep::Take(const grpc::ByteBuffer& buffer) {
  rpc::StepMessage* into = started_ ? &message_ : &first_;
  DTF_RETURN_IF_ERROR(Add(buffer, into));
  started_ = into->more();
  return !into->more();
}

StatusOr<std::vector<grpc::ByteBuffer>> SessionStep::Run(
    ParamStore& store, const std::function<bool()>& cancelled) {
  rpc::PullMessage header;
  WireSink sink;
  Status st =
      RunStep(store, first_, views_, header.mutable_header(), sink, cancelled);
  Clear();
  DTF_RETURN_IF_ERROR(st);
  return sink.Finish(header);
}

void SessionStep::Clear() {
  slices_.clear();
  pieces_.clear();
  views_.clear();
  copies_ = 0;
}

void SessionStep::View(const WirePiece& p) {
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

}  // namespace dtf::runtime
