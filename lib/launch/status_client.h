// Asking a run's chief how the run goes: the Coordinator.Status RPC
// (proto/dtf.proto), with the run's id and secret as every call needs them
// (lib/rpc/call.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lib/base/status.h"

namespace dtf::launch {

struct CoordinatorTask {
  std::string task;
  std::string address;
  std::string state;
  int64_t step = 0;
  double loss = 0;
  double examples_per_sec = 0;
  double seconds_since_heartbeat = 0;
  int64_t rss_bytes = 0;  // 0: unknown
  int restarts = 0;
};

struct CoordinatorStatus {
  std::string run_id;
  int64_t global_step = 0;
  std::string state;
  std::vector<CoordinatorTask> tasks;
  std::map<std::string, double> eval_metrics;
};

// The client side of a run's mutual TLS (lib/launch/run_tls.h): PEM text.
struct ClientTls {
  std::string ca_cert;  // the run's CA: the server must have a certificate
                        // from it
  std::string cert;     // presented to the server
  std::string key;
  // The name the server's certificate must hold; "" for the host of the
  // address called. Set when the call goes through a tunnel.
  std::string server_name;
};

// Calls Coordinator.Status on `address` ("host:port") within `deadline`,
// over mutual TLS when `tls` is not null. Errors name the address:
// Unavailable (nothing answers, or the TLS handshake failed),
// DeadlineExceeded, PermissionDenied (wrong run or secret),
// FailedPrecondition (another protocol version).
StatusOr<CoordinatorStatus> QueryCoordinator(const std::string& address,
                                             const std::string& run_id,
                                             const std::string& secret,
                                             std::chrono::milliseconds deadline,
                                             const ClientTls* tls = nullptr);

}  // namespace dtf::launch
