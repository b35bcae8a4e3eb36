// The frames of a parameter server's Session stream over the run's mutual
// TLS (docs/protocol.md, "Session over TLS"): each is a kind byte, a
// little-endian 32-bit length and that many bytes.
//   hello    the client's first frame: its identity (rpc::CallerIdentity),
//            four strings each ended by a NUL byte;
//   status   the server's answer to it (OK), or the error that ends the
//            stream: a code byte (absl::StatusCode) and the message;
//   message  a StepMessage (client) or PullMessage (server) in the wire
//            format of the gRPC stream's messages (tensor_wire.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "grpcpp/support/byte_buffer.h"
#include "lib/base/status.h"
#include "lib/rpc/call.h"
#include "lib/rpc/tls_stream.h"

namespace dtf::runtime {

enum class FrameKind : uint8_t { kHello = 1, kStatus = 2, kMessage = 3 };

struct Frame {
  FrameKind kind = FrameKind::kMessage;
  // kMessage: the bytes, in one slice of their own.
  grpc::ByteBuffer message;
  // kStatus: what it says.
  Status status;
  // kHello: who it says it is.
  rpc::CallerIdentity caller;
};

// Writes `messages` as message frames, in one go.
Status WriteMessageFrames(rpc::TlsStream& stream,
                          std::span<const grpc::ByteBuffer> messages);
Status WriteStatusFrame(rpc::TlsStream& stream, const Status& status);
Status WriteHelloFrame(rpc::TlsStream& stream,
                       const rpc::CallerIdentity& caller);

// The next frame. DataLoss for a kind not known or a malformed hello or
// status; ResourceExhausted for a frame longer than `max_bytes` (nothing
// of it read); the stream's errors.
StatusOr<Frame> ReadFrame(rpc::TlsStream& stream, size_t max_bytes);

}  // namespace dtf::runtime
