// What every RPC between dtf's processes carries (docs/protocol.md): the
// run's credentials (credentials.h) as gRPC metadata, and a deadline, over
// channels made alike. Servers check the credentials before anything else;
// statuses cross the gRPC boundary only through ToGrpc / FromGrpc.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "grpcpp/grpcpp.h"
#include "lib/base/status.h"
#include "lib/rpc/credentials.h"

namespace dtf::rpc {

// A channel to `address` (host:port) with keepalive, no proxy, and quick
// reconnects; with `creds`' TLS when on (the server's certificate must be
// of the run's CA and name the host dialled; this process shows its own).
std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address,
                                           const RunCredentials& creds);
std::shared_ptr<grpc::ChannelCredentials> MakeChannelCredentials(
    const RunCredentials& creds);

// Constant-time comparison, so a wrong secret teaches nothing.
bool SameSecret(std::string_view a, std::string_view b);

// A client context carrying `creds` and a deadline `timeout` from now; the
// call waits for the server to come up until then.
std::unique_ptr<grpc::ClientContext> MakeClientContext(
    const RunCredentials& creds, std::chrono::milliseconds timeout);

// What a caller says it is: the values of the metadata keys (credentials.h)
// of a call, or of a stream's first frame outside gRPC.
struct CallerIdentity {
  std::string version;
  std::string run_id;
  std::string secret;
  std::string job;
};

// OK, or PermissionDenied (wrong run or secret), FailedPrecondition
// (another protocol version or job) with a message saying which.
Status CheckCaller(const CallerIdentity& caller,
                   const RunCredentials& expected);

// CheckCaller of a call's metadata.
grpc::Status CheckCall(const grpc::ServerContext& context,
                       const RunCredentials& expected);

// The largest request a control call takes (WorkerDone, Shutdown,
// SaveShard, Heartbeat, Status, CommId): a task name, a reason, counters.
inline constexpr size_t kControlMaxRequestBytes = 4 << 10;

// OK, or RESOURCE_EXHAUSTED naming `method` when a request of `bytes`
// (its serialized size) is larger than `limit`. Handlers check it right
// after CheckCall, before acting on the request.
grpc::Status CheckRequestSize(size_t bytes, std::string_view method,
                              size_t limit = kControlMaxRequestBytes);

grpc::Status ToGrpc(const Status& status);
// Keeps the code; prefixes the message with `what` (e.g. "ps:1
// (127.0.0.1:4001): Pull").
Status FromGrpc(const grpc::Status& status, std::string_view what);

}  // namespace dtf::rpc
