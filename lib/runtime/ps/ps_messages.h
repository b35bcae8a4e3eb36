// The parameter server's messages (proto/dtf.proto) in and out of a
// ParamStore (param_store.h): what PsService does with each call once it
// has read it off gRPC, free of gRPC itself (the PS fuzz target drives the
// store through the same functions).
#pragma once

#include <functional>
#include <vector>

#include "google/protobuf/repeated_field.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "lib/base/status.h"
#include "lib/runtime/ps/param_store.h"
#include "proto/dtf.pb.h"

namespace dtf::runtime {

// Views of `pieces`, appended to `out`; they point into `pieces`.
void AppendPieceViews(
    const google::protobuf::RepeatedPtrField<rpc::TensorPiece>& pieces,
    std::vector<PieceView>* out);

// Worker positions on the wire (PullHeader.worker_positions): 4 numbers a
// worker, -1 each for none; WorkerPositionsOf is the inverse (a trailing
// partial group is ignored).
void AppendWorkerPositions(const WorkerPositions& positions,
                           google::protobuf::RepeatedField<int64_t>* out);
WorkerPositions WorkerPositionsOf(
    const google::protobuf::RepeatedField<int64_t>& in);

// `request` as the store takes it; points into `request`.
GatherRequest GatherRequestOf(const rpc::PullRequest& request);

// Collects a gather's pieces as rpc::TensorPiece messages.
class TensorPieceSink final : public PieceSink {
 public:
  explicit TensorPieceSink(std::vector<rpc::TensorPiece>* out) : out_(out) {}
  std::byte* Piece(const PieceInfo& piece) override;

 private:
  std::vector<rpc::TensorPiece>* out_;
};

// Push: the store's verdict on `grads`, pushed with `header`.
StatusOr<PushResult> PushGradients(ParamStore& store,
                                   const rpc::PushMessage::Header& header,
                                   std::span<const PieceView> grads);

// Pull: `request`'s pieces to `sink`, the global step (and slot steps) to
// `header`.
Status PullPieces(ParamStore& store, const rpc::PullRequest& request,
                  rpc::PullHeader* header, PieceSink& sink,
                  const std::function<bool()>& cancelled);

// Step: the push of `first` (its gradients `grads`, taken from every
// message of the call), then its pull, as Push and Pull do; sets
// header->applied.
Status RunStep(ParamStore& store, const rpc::StepMessage& first,
               std::span<const PieceView> grads, rpc::PullHeader* header,
               PieceSink& sink, const std::function<bool()>& cancelled);

}  // namespace dtf::runtime
