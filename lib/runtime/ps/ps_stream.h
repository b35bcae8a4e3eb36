// A worker's long-lived Session stream (proto/dtf.proto) to one parameter
// server on gRPC (session_stream.h says what an exchange does): every
// exchange has its own deadline; a cancelled one cancels the call. Messages
// are raw grpc::ByteBuffers (tensor_wire.h builds and reads them). Not
// thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "lib/base/status.h"
#include "lib/runtime/ps/run_credentials.h"
#include "lib/runtime/ps/session_stream.h"

namespace dtf::runtime {

class PsStream final : public SessionStream {
 public:
  // `what` names the PS in errors ("ps:0 (host:port)"). `cancel`, when not
  // null, is the task's stop flag; it must outlive the stream.
  PsStream(std::shared_ptr<grpc::Channel> channel, RunCredentials creds,
           std::chrono::milliseconds timeout, std::string what,
           const std::atomic<bool>* cancel = nullptr);
  ~PsStream() override;
  PsStream(const PsStream&) = delete;
  PsStream& operator=(const PsStream&) = delete;

  Status Exchange(std::vector<grpc::ByteBuffer> messages,
                  const std::function<Status(const grpc::ByteBuffer&,
                                             bool* more)>& on_answer) override;
  void End() override;
  void set_not_after(std::chrono::system_clock::time_point t) override {
    not_after_ = t;
  }

 private:
  enum class Result { kOk, kFailed, kTimeout, kCancelled };
  struct Event {
    Result result;
    const void* tag;
  };
  Status Open(std::chrono::system_clock::time_point deadline);
  Status Run(
      const std::vector<grpc::ByteBuffer>& messages,
      std::chrono::system_clock::time_point deadline,
      const std::function<Status(const grpc::ByteBuffer&, bool*)>& on_answer);
  // The next completion of an operation, until `deadline`.
  Event Next(std::chrono::system_clock::time_point deadline);
  // As Next, and kCancelled once the cancel flag is set, when the exchange
  // began before it was.
  Event Wait(std::chrono::system_clock::time_point deadline);
  // Waits until no operation of the call is in flight; cancels the call
  // when that takes past `deadline`.
  void Drain(std::chrono::system_clock::time_point deadline);
  // The error of an exchange the cancel flag cut short.
  Status Stopping() const;
  // Ends the stream (cancelled when `cancel`), returning its status.
  grpc::Status Close(bool cancel);

  grpc::GenericStub stub_;
  const RunCredentials creds_;
  const std::chrono::milliseconds timeout_;
  const std::string what_;
  const std::atomic<bool>* const cancel_;
  std::chrono::system_clock::time_point not_after_ =
      std::chrono::system_clock::time_point::max();
  // The exchange in progress began before the cancel flag was set.
  bool interruptible_ = false;
  grpc::CompletionQueue cq_;
  std::unique_ptr<grpc::ClientContext> context_;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call_;
  // The operations in flight, one of each kind at most; their tags are the
  // flags' addresses.
  bool writing_ = false;
  bool reading_ = false;
  bool other_ = false;  // start, writes-done, finish
};

}  // namespace dtf::runtime
