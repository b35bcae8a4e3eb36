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
// step's StepMessages (a worker splits bigger steps), WorkerDone, Shutdown.
inline constexpr int kPsMaxRequestBytes = 8 << 20;
// The largest message a caller of the chief's Coordinator may send
// (Heartbeat, Status, CommId: a task name, counters, an input position).
inline constexpr int kCoordinatorMaxRequestBytes = 64 << 10;

struct ServerLimits {
  // The largest message a call may send to the server: gRPC refuses a
  // bigger one (RESOURCE_EXHAUSTED) as its length arrives, before reading
  // its body.
  int max_receive_bytes = kPsMaxRequestBytes;
  // The largest answer the server sends.
  int max_send_bytes = 8 << 20;
  // Memory gRPC may take for its buffers, and threads for calls in
  // progress (a long-lived stream holds one).
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
