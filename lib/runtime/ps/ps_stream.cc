#include "lib/runtime/ps/ps_stream.h"

#include <algorithm>

#include "lib/base/strings.h"
#include "lib/runtime/ps/rpc_auth.h"

namespace dtf::runtime {

namespace {

using SystemClock = std::chrono::system_clock;

constexpr char kSessionMethod[] = "/dtf.rpc.ParameterServer/Session";
// How long a stream that is done is given to end on its own before it is
// cancelled.
constexpr std::chrono::seconds kCloseGrace{2};
// How often an exchange that the cancel flag may interrupt looks at it.
constexpr std::chrono::milliseconds kCancelPoll{20};

}  // namespace

PsStream::PsStream(std::shared_ptr<grpc::Channel> channel, RunCredentials creds,
                   std::chrono::milliseconds timeout, std::string what,
                   const std::atomic<bool>* cancel)
    : stub_(std::move(channel)),
      creds_(std::move(creds)),
      timeout_(timeout),
      what_(std::move(what)),
      cancel_(cancel) {}

void PsStream::End() {
  if (call_ == nullptr) return;
  // The client is done: the PS's handler ends without an error.
  call_->WritesDone(&other_);
  other_ = true;
  Drain(SystemClock::now() + kCloseGrace);
  Close(/*cancel=*/false);
}

PsStream::~PsStream() {
  End();
  cq_.Shutdown();
  void* tag;
  bool ok;
  while (cq_.Next(&tag, &ok)) {
  }
}

PsStream::Event PsStream::Next(SystemClock::time_point deadline) {
  void* tag = nullptr;
  bool ok = false;
  switch (cq_.AsyncNext(&tag, &ok, deadline)) {
    case grpc::CompletionQueue::TIMEOUT:
      return {Result::kTimeout, nullptr};
    case grpc::CompletionQueue::GOT_EVENT:
      *static_cast<bool*>(tag) = false;  // no longer in flight
      return {ok ? Result::kOk : Result::kFailed, tag};
    case grpc::CompletionQueue::SHUTDOWN:
      break;
  }
  return {Result::kFailed, nullptr};
}

PsStream::Event PsStream::Wait(SystemClock::time_point deadline) {
  if (!interruptible_) return Next(deadline);
  while (true) {
    const Event e = Next(std::min(deadline, SystemClock::now() + kCancelPoll));
    if (e.result != Result::kTimeout) return e;
    if (cancel_->load()) return {Result::kCancelled, nullptr};
    if (SystemClock::now() >= deadline) return e;
  }
}

void PsStream::Drain(SystemClock::time_point deadline) {
  while (writing_ || reading_ || other_) {
    if (Next(deadline).result == Result::kTimeout) {
      // A cancelled call's operations complete at once.
      context_->TryCancel();
      deadline = SystemClock::time_point::max();
    }
  }
}

grpc::Status PsStream::Close(bool cancel) {
  if (call_ == nullptr) return grpc::Status::OK;
  if (cancel) context_->TryCancel();
  // Once one operation failed the call is over, and the others end too.
  Drain(SystemClock::now() + kCloseGrace);
  grpc::Status status;
  call_->Finish(&status, &other_);
  other_ = true;
  Drain(SystemClock::now() + kCloseGrace);
  call_.reset();
  context_.reset();
  return status;
}

Status PsStream::Stopping() const {
  return CancelledError(
      StrCat(what_, ": Session: cancelled, the task is stopping"));
}

Status PsStream::Open(SystemClock::time_point deadline) {
  context_ = MakeClientContext(creds_, timeout_);
  // The stream lives as long as this object; each exchange has its own
  // deadline.
  context_->set_deadline(SystemClock::time_point::max());
  // Stopping, a PS that is gone is not waited for.
  if (cancel_ != nullptr && !interruptible_)
    context_->set_wait_for_ready(false);
  call_ = stub_.PrepareCall(context_.get(), kSessionMethod, &cq_);
  call_->StartCall(&other_);
  other_ = true;
  // Waits (wait-for-ready) for a PS that is still starting.
  const Result r = Wait(deadline).result;
  if (r == Result::kOk) return OkStatus();
  grpc::Status st = Close(/*cancel=*/r != Result::kFailed);
  if (r == Result::kCancelled) return Stopping();
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
  auto fail = [&](Result r) {
    grpc::Status st = Close(/*cancel=*/r != Result::kFailed);
    if (r == Result::kCancelled) return Stopping();
    if (r == Result::kTimeout) {
      st = grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                        "Deadline Exceeded");
    } else if (st.ok()) {
      st = grpc::Status(grpc::StatusCode::UNAVAILABLE, "the stream ended");
    }
    return FromGrpc(st, StrCat(what_, ": Session"));
  };
  // The answer's first read is in flight while the step is written: the
  // writes' completions are not waited for before it.
  grpc::ByteBuffer answer;
  call_->Read(&answer, &reading_);
  reading_ = true;
  for (size_t i = 0; i < messages.size(); ++i) {
    call_->Write(messages[i], &writing_);
    writing_ = true;
    // One write in flight at a time; the last one's completion is taken
    // with the answer's.
    while (writing_ && i + 1 < messages.size()) {
      if (Result r = Wait(deadline).result; r != Result::kOk) return fail(r);
    }
  }
  Status first_error;
  for (bool more = true; more;) {
    while (reading_ || writing_) {
      if (Result r = Wait(deadline).result; r != Result::kOk) return fail(r);
    }
    more = false;
    Status st = on_answer(answer, &more);
    if (first_error.ok()) first_error = st;
    if (more) {
      call_->Read(&answer, &reading_);
      reading_ = true;
    }
  }
  return first_error;
}

Status PsStream::Exchange(std::vector<grpc::ByteBuffer> messages,
                          const std::function<Status(const grpc::ByteBuffer&,
                                                     bool* more)>& on_answer) {
  interruptible_ = cancel_ != nullptr && !cancel_->load();
  const auto deadline = std::min(
      not_after_,
      SystemClock::now() +
          (cancel_ != nullptr && !interruptible_
               ? std::min<std::chrono::milliseconds>(timeout_, kStoppingTimeout)
               : timeout_));
  if (call_ == nullptr) DTF_RETURN_IF_ERROR(Open(deadline));
  return Run(messages, deadline, on_answer);
}

}  // namespace dtf::runtime
