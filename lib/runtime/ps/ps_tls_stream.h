// A worker's Session stream to one parameter server over the run's mutual
// TLS, outside gRPC (docs/protocol.md, "Session over TLS"): the PS says on
// which port it serves it (SessionAddress, a gRPC call with the run's
// credentials), the worker connects there, both ends present certificates
// of the run's CA (the PS's must name its task, "ps-0"), the worker's
// first frame says who it is (checked as a gRPC call's metadata), and then
// each exchange writes the step's messages as frames (ps_tls_frames.h) and
// reads the answer's. What an exchange does: session_stream.h. Not
// thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "lib/rpc/tls_stream.h"
#include "lib/runtime/ps/run_credentials.h"
#include "lib/runtime/ps/session_stream.h"
#include "proto/dtf.grpc.pb.h"

namespace dtf::runtime {

class PsTlsStream final : public SessionStream {
 public:
  // `stub` calls the PS at `address` (host:port, its gRPC address); `task`
  // names its certificate ("ps-0"); `what` names the PS in errors ("ps:0
  // (host:port)"). `cancel`, when not null, is the task's stop flag. Stub
  // and flag must outlive the stream.
  PsTlsStream(rpc::ParameterServer::StubInterface* stub, std::string address,
              std::string task, RunCredentials creds,
              std::chrono::milliseconds timeout, std::string what,
              const std::atomic<bool>* cancel = nullptr);
  ~PsTlsStream() override;
  PsTlsStream(const PsTlsStream&) = delete;
  PsTlsStream& operator=(const PsTlsStream&) = delete;

  Status Exchange(std::vector<grpc::ByteBuffer> messages,
                  const std::function<Status(const grpc::ByteBuffer&,
                                             bool* more)>& on_answer) override;
  void End() override { stream_.reset(); }
  void set_not_after(std::chrono::system_clock::time_point t) override {
    not_after_ = t;
  }

 private:
  using Clock = std::chrono::steady_clock;
  // Connects and says who this task is, by `deadline`; `stopping`: the
  // PS is not waited for.
  Status Open(Clock::time_point deadline, bool stopping,
              const std::atomic<bool>* cancel);
  // The PS's port for the stream, asked in tries short enough to see
  // *cancel (may be null) set.
  StatusOr<int> AskPort(Clock::time_point deadline, bool stopping,
                        const std::atomic<bool>* cancel);
  // Closes the stream after `why` and returns it, named.
  Status Fail(const Status& why);

  rpc::ParameterServer::StubInterface* const stub_;
  const std::string address_;
  const std::string task_;
  const RunCredentials creds_;
  const std::chrono::milliseconds timeout_;
  const std::string what_;
  const std::atomic<bool>* const cancel_;
  std::chrono::system_clock::time_point not_after_ =
      std::chrono::system_clock::time_point::max();
  std::unique_ptr<rpc::TlsStream> stream_;
  // The I/O timeout stream_'s socket has.
  std::chrono::milliseconds io_timeout_{0};
};

}  // namespace dtf::runtime
