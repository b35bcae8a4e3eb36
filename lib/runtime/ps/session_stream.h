// A worker's long-lived Session stream to one parameter server, whatever
// carries it: gRPC (ps_stream.h) or, when the run has TLS, a stream of
// dtf's own under the same mutual TLS (ps_tls_stream.h). Each exchange
// writes one step's messages and reads the answer's; the stream opens on
// the first exchange and again on the next one after a failure. Not
// thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <vector>

#include "grpcpp/support/byte_buffer.h"
#include "lib/base/status.h"

namespace dtf::runtime {

class SessionStream {
 public:
  // The deadline of an exchange begun once the task's cancel flag is set.
  static constexpr std::chrono::seconds kStoppingTimeout{5};

  virtual ~SessionStream() = default;

  // Writes `messages` (one step: every one but the last with `more` set),
  // then reads answers, handing each to `on_answer`, which sets `*more`
  // while more are to come. An error of on_answer is returned once the
  // answer was read whole (the stream stays usable); any other failure
  // closes the stream and returns the PS's status (UNAVAILABLE when the
  // connection went away, also while the stream was idle: the caller
  // rejoins as after any lost call); the next exchange opens a new one.
  // An exchange begun before the task's cancel flag was set ends as soon
  // as it is (Cancelled); one begun after it (a stopping chief's last
  // checkpoint) runs for at most kStoppingTimeout and fails at once when
  // the PS is gone.
  virtual Status Exchange(
      std::vector<grpc::ByteBuffer> messages,
      const std::function<Status(const grpc::ByteBuffer&, bool* more)>&
          on_answer) = 0;

  // Ends the stream, if open, as a client that is done (the PS's handler
  // returns); a later exchange opens a new one.
  virtual void End() = 0;

  // Exchanges begun from now on end by `t` at the latest (DeadlineExceeded),
  // however long the timeout; time_point::max() lifts it.
  virtual void set_not_after(std::chrono::system_clock::time_point t) = 0;
};

}  // namespace dtf::runtime
