// A parameter server's Session streams over the run's mutual TLS, outside
// gRPC (docs/protocol.md, "Session over TLS"; the client is
// ps_tls_stream.h): a listener on the host of the PS's gRPC address that
// takes connections whose certificate, of the run's CA, names a worker
// ("worker-<n>"), each on a thread of its own. A connection's first frame
// must carry the run's credentials (checked as a gRPC call's metadata);
// then each step's messages are applied to the store and answered, as the
// gRPC Session does (ps_session.cc). The stream ends with a status frame
// for a step the PS refuses, as the gRPC one ends with the error.
// Thread-safe.
#pragma once

#include <atomic>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "lib/base/status.h"
#include "lib/rpc/credentials.h"
#include "lib/rpc/tls_stream.h"
#include "lib/runtime/ps/param_store.h"

namespace dtf::runtime {

class PsTlsServer {
 public:
  // Listens on `host` with the PS's certificates `tls` (which must be on);
  // serves `store`, which must outlive the server, to callers presenting
  // `expected`.
  static StatusOr<std::unique_ptr<PsTlsServer>> Start(
      const std::string& host, const rpc::TlsMaterial& tls,
      rpc::RunCredentials expected, ParamStore* store);
  // Stops listening, ends every stream and waits for their threads.
  ~PsTlsServer();
  PsTlsServer(const PsTlsServer&) = delete;
  PsTlsServer& operator=(const PsTlsServer&) = delete;

  int port() const { return port_; }
  // Connections dropped at the handshake so far (no certificate of the
  // run's CA naming a worker).
  int rejected() const { return rejected_; }

 private:
  struct Session {
    std::unique_ptr<rpc::TlsStream> stream;
    std::thread thread;
    std::atomic<bool> done{false};
  };
  PsTlsServer(std::unique_ptr<rpc::TlsListener> listener,
              rpc::RunCredentials expected, ParamStore* store);
  void AcceptLoop();
  // One connection, until it ends or the server stops.
  void Serve(rpc::TlsStream& stream);
  Status ServeSteps(rpc::TlsStream& stream);
  // Joins the threads of the sessions that ended.
  void Reap();

  const std::unique_ptr<rpc::TlsListener> listener_;
  const int port_;
  const rpc::RunCredentials expected_;
  ParamStore* const store_;
  std::atomic<bool> stop_{false};
  std::atomic<int> rejected_{0};
  std::mutex mu_;
  std::list<Session> sessions_;
  std::thread acceptor_;
};

}  // namespace dtf::runtime
