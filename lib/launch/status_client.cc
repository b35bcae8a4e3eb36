#include "lib/launch/status_client.h"

#include <grpcpp/grpcpp.h>

#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "proto/dtf.grpc.pb.h"

namespace dtf::launch {
namespace {

// A grpc::Status as a dtf Status naming `address`.
Status FromGrpc(const grpc::Status& s, const std::string& address) {
  const std::string message =
      StrCat("chief at ", address, ": ", s.error_message());
  switch (s.error_code()) {
    case grpc::StatusCode::OK:
      return OkStatus();
    case grpc::StatusCode::UNAVAILABLE:
      return UnavailableError(message);
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return DeadlineExceededError(message);
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED:
      return PermissionDeniedError(message);
    case grpc::StatusCode::FAILED_PRECONDITION:
      return FailedPreconditionError(message);
    case grpc::StatusCode::UNIMPLEMENTED:
      return UnavailableError(
          StrCat(message, " (it does not serve the Coordinator service)"));
    case grpc::StatusCode::CANCELLED:
      return CancelledError(message);
    default:
      return InternalError(message);
  }
}

}  // namespace

StatusOr<CoordinatorStatus> QueryCoordinator(
    const std::string& address, const std::string& run_id,
    const std::string& secret, std::chrono::milliseconds deadline) {
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  std::unique_ptr<rpc::Coordinator::Stub> stub =
      rpc::Coordinator::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + deadline);
  context.AddMetadata(kRunMetadata, run_id);
  context.AddMetadata(kSecretMetadata, secret);
  context.AddMetadata(kVersionMetadata, kProtocolVersion);
  rpc::StatusRequest request;
  rpc::StatusResponse response;
  const grpc::Status s = stub->Status(&context, request, &response);
  if (!s.ok()) return FromGrpc(s, address);
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
    task.restarts = t.restarts();
    out.tasks.push_back(std::move(task));
  }
  for (const auto& [name, value] : response.eval_metrics()) {
    out.eval_metrics[name] = value;
  }
  return out;
}

StatusOr<std::string> ReadSecret(const std::string& path) {
  DTF_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  while (!text.empty() &&
         std::isspace(static_cast<unsigned char>(text.back()))) {
    text.pop_back();
  }
  size_t start = 0;
  while (start < text.size() &&
         std::isspace(static_cast<unsigned char>(text[start]))) {
    ++start;
  }
  text.erase(0, start);
  if (text.empty()) return DataLossError(StrCat(path, ": empty secret"));
  return text;
}

}  // namespace dtf::launch
