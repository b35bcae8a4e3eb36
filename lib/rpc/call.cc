#include "lib/rpc/call.h"

#include <cstdint>

#include "lib/base/strings.h"

namespace dtf::rpc {
namespace {

std::string Metadata(const grpc::ServerContext& context, const char* key) {
  const auto& md = context.client_metadata();
  auto it = md.find(key);
  if (it == md.end()) return "";
  return std::string(it->second.data(), it->second.size());
}

}  // namespace

bool SameSecret(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= uint8_t(a[i] ^ b[i]);
  return diff == 0;
}

std::unique_ptr<grpc::ClientContext> MakeClientContext(
    const RunCredentials& creds, std::chrono::milliseconds timeout) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->AddMetadata(kRunHeader, creds.run_id);
  context->AddMetadata(kSecretHeader, creds.secret);
  context->AddMetadata(kVersionHeader, std::string(kProtocolVersion));
  if (!creds.job.empty()) context->AddMetadata(kJobHeader, creds.job);
  context->set_deadline(std::chrono::system_clock::now() + timeout);
  // A task that is still starting is waited for (up to the deadline), not
  // failed at once.
  context->set_wait_for_ready(true);
  return context;
}

Status CheckCaller(const CallerIdentity& caller,
                   const RunCredentials& expected) {
  if (caller.version != kProtocolVersion) {
    return FailedPreconditionError(StrCat(
        "protocol version mismatch: this task speaks ", kProtocolVersion,
        ", the caller ", caller.version.empty() ? "(none)" : caller.version));
  }
  if (caller.run_id != expected.run_id ||
      !SameSecret(caller.secret, expected.secret)) {
    return PermissionDeniedError(StrCat("not a task of run ", expected.run_id,
                                        " (wrong run id or secret)"));
  }
  if (!caller.job.empty() && !expected.job.empty() &&
      caller.job != expected.job) {
    return FailedPreconditionError(StrCat(
        "job mismatch: this task trains job ", expected.job, ", the caller ",
        caller.job, "; every task of a run needs the same job file"));
  }
  return OkStatus();
}

grpc::Status CheckCall(const grpc::ServerContext& context,
                       const RunCredentials& expected) {
  const CallerIdentity caller{
      Metadata(context, kVersionHeader), Metadata(context, kRunHeader),
      Metadata(context, kSecretHeader), Metadata(context, kJobHeader)};
  return ToGrpc(CheckCaller(caller, expected));
}

grpc::Status CheckRequestSize(size_t bytes, std::string_view method,
                              size_t limit) {
  if (bytes <= limit) return grpc::Status::OK;
  return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                      StrCat(method, ": a request of ", bytes,
                             " bytes; this call takes at most ", limit));
}

grpc::Status ToGrpc(const Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(Message(status)));
}

Status FromGrpc(const grpc::Status& status, std::string_view what) {
  if (status.ok()) return OkStatus();
  return Status(static_cast<absl::StatusCode>(status.error_code()),
                ToAbsl(StrCat(what, ": ", status.error_message())));
}

std::shared_ptr<grpc::ChannelCredentials> MakeChannelCredentials(
    const RunCredentials& creds) {
  if (!creds.tls.on()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = creds.tls.ca_pem;
  options.pem_private_key = creds.tls.key_pem;
  options.pem_cert_chain = creds.tls.cert_pem;
  return grpc::SslCredentials(options);
}

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address,
                                           const RunCredentials& creds) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  if (creds.tls.on() && !creds.tls.server_name.empty()) {
    args.SetSslTargetNameOverride(creds.tls.server_name);
  }
  return grpc::CreateCustomChannel(address, MakeChannelCredentials(creds),
                                   args);
}

}  // namespace dtf::rpc
