#include "lib/runtime/ps/ps_tls_frames.h"

#include <array>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "grpcpp/support/slice.h"
#include "lib/base/strings.h"
#include "lib/data/little_endian.h"
#include "lib/runtime/ps/buffer_pool.h"

namespace dtf::runtime {
namespace {

constexpr size_t kHeaderBytes = 5;

// Buffers for received message frames (a message of ~1 MiB of pieces and
// its fields), reused once their slices are released: a bulk step (64 MiB
// in 1 MiB messages) would otherwise fault in fresh pages for every frame.
using FramePool = BufferPool<(size_t(1) << 20) + (64 << 10), 128>;

// A slice of `bytes` to read a message frame into; *data receives where.
grpc::Slice MessageSlice(size_t bytes, char** data) {
  if (bytes > 0 && bytes <= FramePool::kBufferBytes) {
    return FramePool::NewSlice(bytes, data);
  }
  grpc::Slice slice(bytes);
  *data = reinterpret_cast<char*>(const_cast<uint8_t*>(slice.begin()));
  return slice;
}

std::array<char, kHeaderBytes> Header(FrameKind kind, size_t bytes) {
  std::array<char, kHeaderBytes> h{};
  h[0] = char(kind);
  little_endian::Store32(h.data() + 1, uint32_t(bytes));
  return h;
}

Status WriteFrame(rpc::TlsStream& stream, FrameKind kind,
                  std::string_view payload) {
  const std::array<char, kHeaderBytes> h = Header(kind, payload.size());
  const std::string_view parts[] = {std::string_view(h.data(), h.size()),
                                    payload};
  return stream.WriteParts(parts);
}

// The NUL-ended strings of a hello, in order; false when malformed.
bool SplitHello(std::string_view payload, rpc::CallerIdentity* out) {
  std::string* fields[] = {&out->version, &out->run_id, &out->secret,
                           &out->job};
  for (std::string* f : fields) {
    const size_t nul = payload.find('\0');
    if (nul == std::string_view::npos) return false;
    *f = std::string(payload.substr(0, nul));
    payload.remove_prefix(nul + 1);
  }
  return payload.empty();
}

}  // namespace

Status WriteMessageFrames(rpc::TlsStream& stream,
                          std::span<const grpc::ByteBuffer> messages) {
  std::vector<std::array<char, kHeaderBytes>> headers;
  headers.reserve(messages.size());
  // Every slice kept where it is while the views point into it (a small
  // slice holds its bytes inline).
  std::deque<grpc::Slice> kept;
  std::vector<grpc::Slice> slices;
  std::vector<std::string_view> parts;
  for (const grpc::ByteBuffer& m : messages) {
    if (m.Valid() && !m.Dump(&slices).ok()) {
      return InternalError("an unreadable message to send");
    }
    headers.push_back(Header(FrameKind::kMessage, m.Length()));
    parts.emplace_back(headers.back().data(), kHeaderBytes);
    for (grpc::Slice& s : slices) {
      const grpc::Slice& at = kept.emplace_back(std::move(s));
      parts.emplace_back(reinterpret_cast<const char*>(at.begin()), at.size());
    }
    slices.clear();
  }
  return stream.WriteParts(parts);
}

Status WriteStatusFrame(rpc::TlsStream& stream, const Status& status) {
  std::string payload(1, char(status.code()));
  payload += std::string(Message(status));
  return WriteFrame(stream, FrameKind::kStatus, payload);
}

Status WriteHelloFrame(rpc::TlsStream& stream,
                       const rpc::CallerIdentity& caller) {
  const std::string payload =
      StrCat(caller.version, std::string_view("\0", 1), caller.run_id,
             std::string_view("\0", 1), caller.secret,
             std::string_view("\0", 1), caller.job, std::string_view("\0", 1));
  return WriteFrame(stream, FrameKind::kHello, payload);
}

StatusOr<Frame> ReadFrame(rpc::TlsStream& stream, size_t max_bytes) {
  std::array<char, kHeaderBytes> h{};
  DTF_RETURN_IF_ERROR(stream.ReadAll(h.data(), h.size()));
  const size_t bytes = little_endian::Load32(h.data() + 1);
  Frame frame;
  frame.kind = FrameKind(uint8_t(h[0]));
  if (frame.kind != FrameKind::kHello && frame.kind != FrameKind::kStatus &&
      frame.kind != FrameKind::kMessage) {
    return DataLossError(StrCat("from ", stream.peer(),
                                ": a frame of unknown kind ",
                                int(uint8_t(h[0]))));
  }
  if (bytes > max_bytes) {
    return ResourceExhaustedError(
        StrCat("from ", stream.peer(), ": a frame of ", bytes,
               " bytes; at most ", max_bytes, " are taken"));
  }
  if (frame.kind == FrameKind::kMessage) {
    char* data = nullptr;
    grpc::Slice slice = MessageSlice(bytes, &data);
    DTF_RETURN_IF_ERROR(stream.ReadAll(data, bytes));
    frame.message = grpc::ByteBuffer(&slice, 1);
    return frame;
  }
  std::string payload(bytes, '\0');
  DTF_RETURN_IF_ERROR(stream.ReadAll(payload.data(), bytes));
  if (frame.kind == FrameKind::kHello) {
    if (!SplitHello(payload, &frame.caller)) {
      return DataLossError(
          StrCat("from ", stream.peer(), ": a malformed hello"));
    }
    return frame;
  }
  if (payload.empty() ||
      uint8_t(payload[0]) > uint8_t(absl::StatusCode::kUnauthenticated)) {
    return DataLossError(
        StrCat("from ", stream.peer(), ": a malformed status"));
  }
  frame.status = Status(absl::StatusCode(uint8_t(payload[0])),
                        ToAbsl(std::string_view(payload).substr(1)));
  return frame;
}

}  // namespace dtf::runtime
