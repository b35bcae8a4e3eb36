// A worker's long-lived Session stream (proto/dtf.proto) to one parameter
// server: each exchange writes one step's messages and reads the answer's.
// The stream opens on the first exchange and again on the next one after a
// failure; every exchange has its own deadline. An exchange begun before
// the task's cancel flag was set ends as soon as it is (the call is
// cancelled: Cancelled); one begun after it (a stopping chief's last
// checkpoint) runs, for at most kStoppingTimeout, and fails at once when
// the PS is gone (no wait for it to come back). Messages are raw
// grpc::ByteBuffers (tensor_wire.h builds and reads them). Not thread-safe.
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

namespace dtf::runtime {

class PsStream {
 public:
  // The deadline of an exchange begun once the cancel flag is set.
  static constexpr std::chrono::seconds kStoppingTimeout{5};

  // `what` names the PS in errors ("ps:0 (host:port)"). `cancel`, when not
  // null, is the task's stop flag; it must outlive the stream.
  PsStream(std::shared_ptr<grpc::Channel> channel, RunCredentials creds,
           std::chrono::milliseconds timeout, std::string what,
           const std::atomic<bool>* cancel = nullptr);
  ~PsStream();
  PsStream(const PsStream&) = delete;
  PsStream& operator=(const PsStream&) = delete;

  // Writes `messages` (one step: every one but the last with `more` set),
  // then reads answers, handing each to `on_answer`, which sets `*more`
  // while more are to come. An error of on_answer is returned once the
  // answer was read whole (the stream stays usable); any other failure
  // closes the stream and returns the PS's status (UNAVAILABLE when the
  // connection went away, also while the stream was idle: the caller
  // rejoins as after any lost call); the next exchange opens a new one.
  Status Exchange(std::vector<grpc::ByteBuffer> messages,
                  const std::function<Status(const grpc::ByteBuffer&,
                                             bool* more)>& on_answer);

  // Ends the stream, if open, as a client that is done (the PS's handler
  // returns); a later exchange opens a new one.
  void End();

  // Exchanges begun from now on end by `t` at the latest (DeadlineExceeded),
  // however long the timeout; time_point::max() lifts it.
  void set_not_after(std::chrono::system_clock::time_point t) {
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
