// The parts of a parameter server's Session stream that do not depend on
// the transport carrying it (gRPC's stream, ps_session.cc, or the run's
// mutual TLS, ps_tls_server.h): a step's messages gathered into views of
// their gradient pieces, and a pull's answer written into wire messages.
// Pushed values reach the store as views of the received slices (copied
// only when a piece crosses slices); pulled values are written by the
// store straight into the answer's slices.
#pragma once

#include <deque>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/slice.h"
#include "lib/base/status.h"
#include "lib/runtime/ps/param_store.h"
#include "lib/runtime/ps/tensor_wire.h"
#include "proto/dtf.pb.h"

namespace dtf::runtime {

// A gather's pieces written into wire messages of about
// kMaxStreamMessageBytes each.
class WireSink final : public PieceSink {
 public:
  std::byte* Piece(const PieceInfo& info) override;

  // The answer's messages: `header` rides on the first, `more` on all but
  // the last.
  std::vector<grpc::ByteBuffer> Finish(const rpc::PullMessage& header);

 private:
  std::deque<WireWriter> writers_ = std::deque<WireWriter>(1);
  rpc::TensorPiece meta_;
};

// A Session's steps as their messages come: each step's messages, and
// views of their gradient pieces, until its last one; then the step is
// applied and answered.
class SessionStep {
 public:
  // Takes the next message; true when it was the step's last (then Run).
  // Values that cross slices are gathered now, while later messages still
  // travel.
  StatusOr<bool> Take(const grpc::ByteBuffer& buffer);

  // The step taken: its push applied to `store`, its pull answered, as
  // the answer's messages (RunStep, ps_messages.h). Ready for the next.
  StatusOr<std::vector<grpc::ByteBuffer>> Run(
      ParamStore& store, const std::function<bool()>& cancelled);

 private:
  // `message` receives the fields of `buffer` but the pieces.
  Status Add(const grpc::ByteBuffer& buffer, rpc::StepMessage* message);
  void View(const WirePiece& p);
  void Clear();

  rpc::StepMessage first_, message_;
  bool started_ = false;
  std::deque<std::vector<grpc::Slice>> slices_;
  std::deque<WirePiece> pieces_;
  std::vector<PieceView> views_;
  std::deque<std::vector<std::byte>> copied_;
  size_t copies_ = 0;
  std::string rest_;
};

}  // namespace dtf::runtime
