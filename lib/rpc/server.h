// How every dtf gRPC server listens (docs/protocol.md): with the run's
// mutual TLS when the credentials carry it (a client needs a certificate
// of the run's CA; strangers fail the handshake); the run's secret checked
// on each call's metadata before its body is read (with TLS, and on
// loopback); within bounded memory, threads, streams and message sizes.
#pragma once

#include <memory>
#include <string>

#include "grpcpp/grpcpp.h"
#include "lib/rpc/credentials.h"

namespace dtf::rpc {

// The largest message a caller of a parameter server may send: one of a
// step's StepMessages (a worker splits bigger steps). Its control calls
// (WorkerDone, Shutdown, SaveShard) take far less: each handler refuses a
// request over rpc::kControlMaxRequestBytes (call.h) before acting on it.
inline constexpr int kPsMaxRequestBytes = 8 << 20;
// The largest message a caller of the chief's Coordinator may send (a
// KvSet of the Gloo rendezvous; Heartbeat, Status and CommId take
// kControlMaxRequestBytes), and the memory its server's buffers may take.
inline constexpr int kCoordinatorMaxRequestBytes = 64 << 10;
inline constexpr size_t kCoordinatorMaxMemoryBytes = size_t(64) << 20;

struct ServerLimits {
  // The largest message a call may send to the server: RESOURCE_EXHAUSTED
  // beyond, before any handler runs. gRPC (1.51) compares a message's size
  // only once it holds the whole message: what bounds the memory a large
  // one takes is max_memory_bytes below.
  int max_receive_bytes = kPsMaxRequestBytes;
  // The largest answer the server sends.
  int max_send_bytes = 8 << 20;
  // Memory gRPC may take for its buffers, and threads for calls in
  // progress (a long-lived stream holds one). Once its buffers reach
  // max_memory_bytes, gRPC stops reading and resets the calls it holds
  // the most for (ENHANCE_YOUR_CALM): a message larger than this is never
  // read whole, and the server's other calls go on.
  size_t max_memory_bytes = size_t(1) << 30;
  int max_threads = 64;
  // Streams (calls) open at once on one connection.
  int max_streams_per_connection = 32;
};

// Adds a listening port on `address` to `builder` with the credentials
// `expected` calls for, and the limits; the port bound lands in
// *bound_port when the server starts.
void ConfigureServer(grpc::ServerBuilder* builder, const std::string& address,
                     const RunCredentials& expected, const ServerLimits& limits,
                     int* bound_port);

// The server credentials for a run: mutual TLS, or plaintext; the secret
// checked in an auth metadata processor (before a call's body is read)
// with TLS and, on 127.0.0.1 or ::1 (`loopback`), without: gRPC's local
// credentials there, which take peers of those addresses only. A plaintext
// server on another address checks the secret in its handlers (CheckCall).
std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(
    const RunCredentials& expected, bool loopback);

}  // namespace dtf::rpc
