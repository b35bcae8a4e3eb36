#include "lib/runtime/ps/ps_tls_server.h"

#include <chrono>
#include <utility>

#include "lib/base/strings.h"
#include "lib/rpc/call.h"
#include "lib/rpc/server.h"
#include "lib/runtime/ps/ps_session_step.h"
#include "lib/runtime/ps/ps_tls_frames.h"

namespace dtf::runtime {
namespace {

using std::chrono::milliseconds;

// Reads and writes within a frame: a peer that stops mid-frame for this
// long is dropped. Between frames a stream waits as long as the worker
// does (its steps' barrier, the chief's evaluations).
constexpr milliseconds kIoTimeout{60000};
// The hello's size at most.
constexpr size_t kMaxHelloBytes = size_t(4) << 10;
// Streams served at once; connections past them are closed.
constexpr size_t kMaxSessions = 512;

}  // namespace

StatusOr<std::unique_ptr<PsTlsServer>> PsTlsServer::Start(
    const std::string& host, const rpc::TlsMaterial& tls,
    rpc::RunCredentials expected, ParamStore* store) {
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<rpc::TlsListener> listener,
                       rpc::TlsListener::Listen(host, tls, kIoTimeout));
  std::unique_ptr<PsTlsServer> server(
      new PsTlsServer(std::move(listener), std::move(expected), store));
  server->acceptor_ = std::thread([s = server.get()] { s->AcceptLoop(); });
  return server;
}

PsTlsServer::PsTlsServer(std::unique_ptr<rpc::TlsListener> listener,
                         rpc::RunCredentials expected, ParamStore* store)
    : listener_(std::move(listener)),
      port_(listener_->port()),
      expected_(std::move(expected)),
      store_(store) {}

PsTlsServer::~PsTlsServer() {
  stop_ = true;
  if (acceptor_.joinable()) acceptor_.join();
  std::lock_guard<std::mutex> lock(mu_);
  for (Session& s : sessions_) s.stream->Shutdown();
  for (Session& s : sessions_) s.thread.join();
}

void PsTlsServer::Reap() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    if (!it->done) {
      ++it;
      continue;
    }
    it->thread.join();
    it = sessions_.erase(it);
  }
}

void PsTlsServer::AcceptLoop() {
  while (!stop_) {
    StatusOr<std::unique_ptr<rpc::TlsStream>> accepted =
        listener_->Accept("worker-*", milliseconds(500), &stop_);
    rejected_ = listener_->rejected();
    Reap();
    if (!accepted.ok()) continue;
    std::lock_guard<std::mutex> lock(mu_);
    if (sessions_.size() >= kMaxSessions) continue;  // closed on return
    Session& s = sessions_.emplace_back();
    s.stream = *std::move(accepted);
    s.thread = std::thread([this, &s] {
      Serve(*s.stream);
      s.done = true;
    });
  }
}

void PsTlsServer::Serve(rpc::TlsStream& stream) {
  StatusOr<Frame> hello = [&]() -> StatusOr<Frame> {
    // A connection that says nothing within the I/O timeout is dropped.
    DTF_RETURN_IF_ERROR(stream.WaitReadable(
        std::chrono::steady_clock::now() + kIoTimeout, &stop_));
    return ReadFrame(stream, kMaxHelloBytes);
  }();
  if (!hello.ok()) return;
  Status admitted =
      hello->kind != FrameKind::kHello
          ? PermissionDeniedError("the stream did not begin with a hello")
          : rpc::CheckCaller(hello->caller, expected_);
  if (!WriteStatusFrame(stream, admitted).ok() || !admitted.ok()) return;
  Status ended = ServeSteps(stream);
  // The stream's own failures (the worker went away) end it silently;
  // a refused step is said.
  if (!ended.ok()) (void)WriteStatusFrame(stream, ended);
}

Status PsTlsServer::ServeSteps(rpc::TlsStream& stream) {
  auto cancelled = [this] { return stop_.load(); };
  SessionStep step;
  while (true) {
    if (!stream
             .WaitReadable(std::chrono::steady_clock::time_point::max(), &stop_)
             .ok()) {
      return OkStatus();
    }
    StatusOr<Frame> frame = ReadFrame(stream, size_t(rpc::kPsMaxRequestBytes));
    if (!frame.ok()) {
      // A frame too long or malformed is said; the stream's own failures
      // (the worker went away) end it silently.
      const StatusCode code = frame.status().code();
      return code == StatusCode::kResourceExhausted ||
                     code == StatusCode::kDataLoss
                 ? frame.status()
                 : OkStatus();
    }
    if (frame->kind != FrameKind::kMessage) {
      return InvalidArgumentError("a frame other than a step message");
    }
    DTF_ASSIGN_OR_RETURN(const bool last, step.Take(frame->message));
    if (!last) continue;
    // The step's last message: its push is applied, its pull answered.
    DTF_ASSIGN_OR_RETURN(std::vector<grpc::ByteBuffer> answer,
                         step.Run(*store_, cancelled));
    if (!WriteMessageFrames(stream, answer).ok()) return OkStatus();
  }
}

}  // namespace dtf::runtime
