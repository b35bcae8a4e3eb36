#include "lib/runtime/ps/ps_messages.h"

#include <optional>
#include <string>

#include "lib/base/strings.h"

namespace dtf::runtime {

void AppendWorkerPositions(const WorkerPositions& positions,
                           google::protobuf::RepeatedField<int64_t>* out) {
  for (const std::optional<InputPosition>& p : positions) {
    const InputPosition q = p.value_or(InputPosition{-1, -1, -1, -1, -1});
    for (const int64_t n : PositionNumbers(q)) out->Add(n);
  }
}

WorkerPositions WorkerPositionsOf(
    const google::protobuf::RepeatedField<int64_t>& in) {
  WorkerPositions positions;
  constexpr int kStride = int(kInputPositionNumbers);
  for (int i = 0; i + kStride <= in.size(); i += kStride) {
    const InputPosition q = *PositionFromNumbers(
        std::span<const int64_t>(in.data() + i, kInputPositionNumbers));
    if (q.epoch < 0) {
      positions.push_back(std::nullopt);
    } else {
      positions.push_back(q);
    }
  }
  return positions;
}

void AppendPieceViews(
    const google::protobuf::RepeatedPtrField<rpc::TensorPiece>& pieces,
    std::vector<PieceView>* out) {
  for (const rpc::TensorPiece& piece : pieces) {
    PieceView& v = out->emplace_back();
    v.name = piece.name();
    v.slot = piece.slot();
    v.row_offset = piece.row_offset();
    v.rows = piece.rows();
    v.ids =
        std::span<const int64_t>(piece.ids().data(), size_t(piece.ids_size()));
    v.values = std::as_bytes(std::span<const char>(piece.values()));
  }
}

GatherRequest GatherRequestOf(const rpc::PullRequest& request) {
  GatherRequest g;
  g.dense.assign(request.dense().begin(), request.dense().end());
  for (const rpc::PullRequest::Sparse& s : request.sparse()) {
    GatherRequest::Sparse& out = g.sparse.emplace_back();
    out.name = s.name();
    out.ids = std::span<const int64_t>(s.ids().data(), size_t(s.ids_size()));
    out.all = s.all();
  }
  g.worker = request.worker();
  g.min_step = request.min_step();
  g.slots = request.slots();
  return g;
}

std::byte* TensorPieceSink::Piece(const PieceInfo& piece) {
  rpc::TensorPiece& p = out_->emplace_back();
  p.set_name(std::string(piece.name));
  for (const int64_t d : piece.shape) p.add_shape(d);
  if (piece.ids.empty()) p.set_row_offset(piece.row_offset);
  p.set_rows(piece.rows);
  p.mutable_ids()->Add(piece.ids.begin(), piece.ids.end());
  if (!piece.slot.empty()) p.set_slot(std::string(piece.slot));
  std::string* values = p.mutable_values();
  values->resize(size_t(piece.rows * piece.cols) * 4);
  return reinterpret_cast<std::byte*>(values->data());
}

StatusOr<PushResult> PushGradients(ParamStore& store,
                                   const rpc::PushMessage::Header& header,
                                   std::span<const PieceView> grads) {
  PushHeader h;
  h.worker = header.worker();
  h.step = header.step();
  const auto& p = header.input_position();
  if (!p.empty()) {
    h.position = PositionFromNumbers(
        std::span<const int64_t>(p.data(), size_t(p.size())));
    if (!h.position) {
      return InvalidArgumentError(
          StrCat("worker ", h.worker, ": an input position of ", p.size(),
                 " numbers (epoch, file, record, epoch_record, emitted: 5)"));
    }
  }
  if (header.has_input_shard()) {
    if (header.input_shard() < 0) {
      return InvalidArgumentError(
          StrCat("worker ", h.worker, ": input shard ", header.input_shard()));
    }
    h.shard = header.input_shard();
  }
  return store.Push(h, grads);
}

Status PullPieces(ParamStore& store, const rpc::PullRequest& request,
                  rpc::PullHeader* header, PieceSink& sink,
                  const std::function<bool()>& cancelled) {
  DTF_ASSIGN_OR_RETURN(GatherResult result,
                       store.Gather(GatherRequestOf(request), sink, cancelled));
  header->set_global_step(result.global_step);
  for (const auto& [name, step] : result.slot_steps) {
    (*header->mutable_slot_steps())[name] = step;
  }
  AppendWorkerPositions(result.positions, header->mutable_worker_positions());
  return OkStatus();
}

Status RunStep(ParamStore& store, const rpc::StepMessage& first,
               std::span<const PieceView> grads, rpc::PullHeader* header,
               PieceSink& sink, const std::function<bool()>& cancelled) {
  if (first.has_push()) {
    DTF_ASSIGN_OR_RETURN(PushResult pushed,
                         PushGradients(store, first.push(), grads));
    header->set_applied(pushed.applied);
    header->set_global_step(pushed.global_step);
  }
  if (!first.has_pull()) return OkStatus();
  return PullPieces(store, first.pull(), header, sink, cancelled);
}

}  // namespace dtf::runtime
