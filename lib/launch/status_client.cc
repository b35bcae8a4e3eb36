#include "lib/launch/status_client.h"

#include "lib/base/strings.h"
#include "lib/rpc/call.h"
#include "proto/dtf.grpc.pb.h"

namespace dtf::launch {
namespace {

// The call's status naming the chief at `address`, in the codes dtf status
// tells apart.
Status ChiefStatus(const grpc::Status& s, const std::string& address) {
  Status st = rpc::FromGrpc(s, StrCat("chief at ", address));
  switch (s.error_code()) {
    case grpc::StatusCode::UNAUTHENTICATED:
      return PermissionDeniedError(Message(st));
    case grpc::StatusCode::UNIMPLEMENTED:
      return UnavailableError(
          StrCat(Message(st), " (it does not serve the Coordinator service)"));
    default:
      return st;
  }
}

}  // namespace

StatusOr<CoordinatorStatus> QueryCoordinator(const std::string& address,
                                             const std::string& run_id,
                                             const std::string& secret,
                                             std::chrono::milliseconds deadline,
                                             const ClientTls* tls) {
  rpc::RunCredentials creds{run_id, secret, ""};
  if (tls != nullptr) {
    creds.tls = {tls->ca_cert, tls->cert, tls->key, tls->server_name};
  }
  std::unique_ptr<rpc::Coordinator::Stub> stub =
      rpc::Coordinator::NewStub(rpc::MakeChannel(address, creds));
  std::unique_ptr<grpc::ClientContext> context =
      rpc::MakeClientContext(creds, deadline);
  // A chief that is not there is told at once (then tried through its
  // host), not waited for.
  context->set_wait_for_ready(false);
  rpc::StatusRequest request;
  rpc::StatusResponse response;
  const grpc::Status s = stub->Status(context.get(), request, &response);
  if (!s.ok()) return ChiefStatus(s, address);
  CoordinatorStatus out;
  out.run_id = response.run_id();
  out.global_step = response.global_step();
  out.state = response.state();
  for (const rpc::TaskStatus& t : response.tasks()) {
    CoordinatorTask task;
    task.task = t.task();
    task.address = t.address();
    task.state = t.state();
    task.step = t.step();
    task.loss = t.loss();
    task.examples_per_sec = t.examples_per_sec();
    task.seconds_since_heartbeat = t.seconds_since_heartbeat();
    task.rss_bytes = t.rss_bytes();
    task.restarts = t.restarts();
    out.tasks.push_back(std::move(task));
  }
  for (const auto& [name, value] : response.eval_metrics()) {
    out.eval_metrics[name] = value;
  }
  return out;
}

}  // namespace dtf::launch
