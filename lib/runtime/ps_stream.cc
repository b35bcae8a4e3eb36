#include "lib/runtime/ps_stream.h"

#include "lib/base/strings.h"
#include "lib/runtime/rpc_auth.h"

namespace dtf::runtime {

namespace {

using SystemClock = std::chrono::system_clock;

constexpr char kSessionMethod[] = "/dtf.rpc.ParameterServer/Session";
// How long a stream that is done is given to end on its own before it is
// cancelled.
constexpr std::chrono::seconds kCloseGrace{2};

}  // namespace

PsStream::PsStream(std::shared_ptr<grpc::Channel> channel, RunCredentials creds,
                   std::chrono::milliseconds timeout, std::string what)
    : stub_(std::move(channel)),
      creds_(std::move(creds)),
      timeout_(timeout),
      what_(std::move(what)) {}

void PsStream::End() {
  if (call_ == nullptr) return;
  // The client is done: the PS's handler ends without an error.
  call_->WritesDone(this);
  in_flight_ = true;
  Close(Wait(SystemClock::now() + kCloseGrace) != Result::kOk);
}

PsStream::~PsStream() {
  End();
  cq_.Shutdown();
  void* tag;
  bool ok;
  while (cq_.Next(&tag, &ok)) {
  }
}

PsStream::Result PsStream::Wait(SystemClock::time_point deadline) {
  void* tag;
  bool ok = false;
  switch (cq_.AsyncNext(&tag, &ok, deadline)) {
    case grpc::CompletionQueue::TIMEOUT:
      return Result::kTimeout;
    case grpc::CompletionQueue::GOT_EVENT:
      in_flight_ = false;
      return ok ? Result::kOk : Result::kFailed;
    case grpc::CompletionQueue::SHUTDOWN:
      break;
  }
  in_flight_ = false;
  return Result::kFailed;
}

grpc::Status PsStream::Close(bool cancel) {
  if (call_ == nullptr) return grpc::Status::OK;
  if (cancel) context_->TryCancel();
  // A cancelled call's operations complete at once.
  if (in_flight_) Wait(SystemClock::time_point::max());
  grpc::Status status;
  call_->Finish(&status, this);
  in_flight_ = true;
  if (Wait(SystemClock::now() + kCloseGrace) == Result::kTimeout) {
    context_->TryCancel();
    Wait(SystemClock::time_point::max());
  }
  call_.reset();
  context_.reset();
  return status;
}

Status PsStream::Open(SystemClock::time_point deadline) {
  context_ = MakeClientContext(creds_, timeout_);
  // The stream lives as long as this object; each exchange has its own
  // deadline.
  context_->set_deadline(SystemClock::time_point::max());
  call_ = stub_.PrepareCall(context_.get(), kSessionMethod, &cq_);
  call_->StartCall(this);
  in_flight_ = true;
  // Waits (wait-for-ready) for a PS that is still starting.
  const Result r = Wait(deadline);
  if (r == Result::kOk) return OkStatus();
  grpc::Status st = Close(/*cancel=*/r == Result::kTimeout);
  if (r == Result::kTimeout || st.ok()) {
    st =
        grpc::Status(r == Result::kTimeout ? grpc::StatusCode::DEADLINE_EXCEEDED
                                           : grpc::StatusCode::UNAVAILABLE,
                     "the session stream did not open");
  }
  return FromGrpc(st, StrCat(what_, ": Session"));
}

Status PsStream::Run(
    const std::vector<grpc::ByteBuffer>& messages,
    SystemClock::time_point deadline,
    const std::function<Status(const grpc::ByteBuffer&, bool*)>& on_answer) {
  // The stream's end: the PS's status, or UNAVAILABLE when it ended the
  // stream without one, DEADLINE_EXCEEDED when the exchange ran out of time.
  auto fail = [&](Result r, const char* doing) {
    grpc::Status st = Close(/*cancel=*/r == Result::kTimeout);
    if (r == Result::kTimeout) {
      st = grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                        StrCat("Deadline Exceeded (", doing, ")"));
    } else if (st.ok()) {
      st = grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        StrCat("the stream ended (", doing, ")"));
    }
    return FromGrpc(st, StrCat(what_, ": Session"));
  };
  for (const grpc::ByteBuffer& message : messages) {
    call_->Write(message, this);
    in_flight_ = true;
    if (Result r = Wait(deadline); r != Result::kOk) return fail(r, "writing");
  }
  Status first_error;
  for (bool more = true; more;) {
    grpc::ByteBuffer answer;
    call_->Read(&answer, this);
    in_flight_ = true;
    if (Result r = Wait(deadline); r != Result::kOk) return fail(r, "reading");
    more = false;
    Status st = on_answer(answer, &more);
    if (first_error.ok()) first_error = st;
  }
  return first_error;
}

Status PsStream::Exchange(std::vector<grpc::ByteBuffer> messages,
                          bool idempotent,
                          const std::function<Status(const grpc::ByteBuffer&,
                                                     bool* more)>& on_answer) {
  const auto deadline = SystemClock::now() + timeout_;
  const bool reused = call_ != nullptr;
  if (!reused) DTF_RETURN_IF_ERROR(Open(deadline));
  Status st = Run(messages, deadline, on_answer);
  if (!st.ok() && idempotent && reused && call_ == nullptr &&
      st.code() == absl::StatusCode::kUnavailable) {
    DTF_RETURN_IF_ERROR(Open(deadline));
    st = Run(messages, deadline, on_answer);
  }
  return st;
}

}  // namespace dtf::runtime
