#include "lib/runtime/ps/ps_tls_stream.h"

#include <algorithm>
#include <utility>

#include "lib/base/host_name.h"
#include "lib/base/strings.h"
#include "lib/rpc/call.h"
#include "lib/runtime/ps/ps_tls_frames.h"
#include "lib/runtime/ps/rpc_auth.h"

namespace dtf::runtime {
namespace {

using std::chrono::milliseconds;

// The longest answer message taken: a pull's messages hold about 1 MiB of
// pieces each.
constexpr size_t kMaxAnswerBytes = size_t(8) << 20;
// The longest status or hello.
constexpr size_t kMaxControlBytes = size_t(64) << 10;
// Each try of SessionAddress, so that a cancel is seen.
constexpr milliseconds kAskTry{250};

// "host:port", brackets around an IPv6 host.
std::string JoinAddress(std::string_view host, int port) {
  const bool v6 = host.find(':') != std::string_view::npos;
  return StrCat(v6 ? "[" : "", host, v6 ? "]" : "", ":", port);
}

}  // namespace

PsTlsStream::PsTlsStream(rpc::ParameterServer::StubInterface* stub,
                         std::string address, std::string task,
                         RunCredentials creds, milliseconds timeout,
                         std::string what, const std::atomic<bool>* cancel)
    : stub_(stub),
      address_(std::move(address)),
      task_(std::move(task)),
      creds_(std::move(creds)),
      timeout_(timeout),
      what_(std::move(what)),
      cancel_(cancel) {}

PsTlsStream::~PsTlsStream() = default;

Status PsTlsStream::Fail(const Status& why) {
  stream_.reset();
  if (why.code() == StatusCode::kCancelled && cancel_ != nullptr &&
      cancel_->load()) {
    return CancelledError(
        StrCat(what_, ": Session: cancelled, the task is stopping"));
  }
  return Annotate(why, StrCat(what_, ": Session"));
}

StatusOr<int> PsTlsStream::AskPort(Clock::time_point deadline, bool stopping,
                                   const std::atomic<bool>* cancel) {
  while (true) {
    if (cancel != nullptr && cancel->load()) {
      return Fail(CancelledError("cancelled"));
    }
    const auto left =
        std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    auto context = MakeClientContext(
        creds_, std::max(milliseconds(1), std::min(left, kAskTry)));
    if (stopping) context->set_wait_for_ready(false);
    rpc::SessionAddressRequest request;
    rpc::SessionAddressResponse response;
    const grpc::Status st =
        stub_->SessionAddress(context.get(), request, &response);
    if (st.ok()) {
      if (response.port() <= 0 || response.port() > 65535) {
        return UnavailableError(StrCat(what_,
                                       ": serves no Session over TLS (port ",
                                       response.port(), ")"));
      }
      return response.port();
    }
    const bool again = st.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
                       st.error_code() == grpc::StatusCode::UNAVAILABLE;
    if (!again || stopping || Clock::now() >= deadline) {
      return FromGrpc(st, StrCat(what_, ": SessionAddress"));
    }
  }
}

Status PsTlsStream::Open(Clock::time_point deadline, bool stopping,
                         const std::atomic<bool>* cancel) {
  DTF_ASSIGN_OR_RETURN(const int port, AskPort(deadline, stopping, cancel));
  const std::string at = JoinAddress(HostOfAddress(address_), port);
  const auto left = std::max(
      milliseconds(1),
      std::chrono::duration_cast<milliseconds>(deadline - Clock::now()));
  StatusOr<std::unique_ptr<rpc::TlsStream>> stream =
      rpc::TlsConnect(at, creds_.tls, task_, left, timeout_);
  if (!stream.ok())
    return Annotate(stream.status(), StrCat(what_, ": Session"));
  stream_ = *std::move(stream);
  io_timeout_ = timeout_;
  const rpc::CallerIdentity me{std::string(kProtocolVersion), creds_.run_id,
                               creds_.secret, creds_.job};
  if (Status st = WriteHelloFrame(*stream_, me); !st.ok()) return Fail(st);
  if (Status st = stream_->WaitReadable(deadline, cancel); !st.ok()) {
    return Fail(st);
  }
  StatusOr<Frame> answer = ReadFrame(*stream_, kMaxControlBytes);
  if (!answer.ok()) return Fail(answer.status());
  if (answer->kind != FrameKind::kStatus) {
    return Fail(DataLossError("the PS did not answer the hello"));
  }
  if (!answer->status.ok()) return Fail(answer->status);
  return OkStatus();
}

Status PsTlsStream::Exchange(
    std::vector<grpc::ByteBuffer> messages,
    const std::function<Status(const grpc::ByteBuffer&, bool* more)>&
        on_answer) {
  const bool interruptible = cancel_ != nullptr && !cancel_->load();
  const bool stopping = cancel_ != nullptr && !interruptible;
  const std::atomic<bool>* cancel = interruptible ? cancel_ : nullptr;
  milliseconds timeout =
      stopping ? std::min<milliseconds>(timeout_, kStoppingTimeout) : timeout_;
  if (not_after_ != std::chrono::system_clock::time_point::max()) {
    timeout =
        std::min(timeout, std::chrono::duration_cast<milliseconds>(
                              not_after_ - std::chrono::system_clock::now()));
  }
  const Clock::time_point deadline =
      Clock::now() + std::max(timeout, milliseconds(0));
  if (stream_ == nullptr) {
    DTF_RETURN_IF_ERROR(Open(deadline, stopping, cancel));
  }
  // A PS that stops reading (frozen, or its host cut off) fails the
  // step's writes and reads by a deadline shorter than the stream's
  // timeout too (a stopping task's, NotAfter's); the stream keeps its own
  // timeout, set once, for every other step.
  const milliseconds io_timeout =
      timeout < timeout_
          ? std::max(milliseconds(1), std::chrono::duration_cast<milliseconds>(
                                          deadline - Clock::now()))
          : timeout_;
  if (io_timeout != io_timeout_) {
    stream_->set_io_timeout(io_timeout);
    io_timeout_ = io_timeout;
  }
  if (Status st = WriteMessageFrames(*stream_, messages); !st.ok()) {
    return Fail(st);
  }
  Status first_error;
  for (bool more = true; more;) {
    if (Status st = stream_->WaitReadable(deadline, cancel); !st.ok()) {
      return Fail(st);
    }
    StatusOr<Frame> frame = ReadFrame(*stream_, kMaxAnswerBytes);
    if (!frame.ok()) return Fail(frame.status());
    if (frame->kind == FrameKind::kStatus) {
      // The PS ends the stream with the error of a step it refuses.
      return Fail(frame->status.ok() ? UnavailableError("the stream ended")
                                     : frame->status);
    }
    if (frame->kind != FrameKind::kMessage) {
      return Fail(DataLossError("a hello from the PS"));
    }
    more = false;
    Status st = on_answer(frame->message, &more);
    if (first_error.ok()) first_error = st;
  }
  return first_error;
}

}  // namespace dtf::runtime
