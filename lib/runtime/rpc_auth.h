// What every RPC between the tasks of a run carries (docs/protocol.md): the
// run's credentials (run_credentials.h) as gRPC metadata, and a deadline.
// Servers check them before anything else; statuses cross the gRPC boundary
// only through ToGrpc / FromGrpc.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "grpcpp/grpcpp.h"
#include "lib/base/status.h"
#include "lib/runtime/run_credentials.h"

namespace dtf::runtime {

// A client context carrying `creds` and a deadline `timeout` from now; the
// call waits for the server to come up until then.
std::unique_ptr<grpc::ClientContext> MakeClientContext(
    const RunCredentials& creds, std::chrono::milliseconds timeout);

// OK, or PERMISSION_DENIED (wrong run or secret), FAILED_PRECONDITION
// (another protocol version or job) with a message saying which.
grpc::Status CheckCall(const grpc::ServerContext& context,
                       const RunCredentials& expected);

grpc::Status ToGrpc(const Status& status);
// Prefixes the message with `what` (e.g. "ps:1 (127.0.0.1:4001): Pull").
Status FromGrpc(const grpc::Status& status, std::string_view what);

// A channel to `address` (host:port) with keepalive, no proxy.
std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address);

}  // namespace dtf::runtime
