#include "lib/rpc/server.h"

#include <cstdint>
#include <utility>

#include "grpcpp/resource_quota.h"
#include "grpcpp/security/auth_metadata_processor.h"
#include "lib/base/strings.h"
#include "lib/rpc/call.h"

namespace dtf::rpc {
namespace {

// Refuses, from its metadata alone, a call that does not carry the run's id
// and secret: the call ends UNAUTHENTICATED before a handler runs or a
// message of it is parsed. The handlers check it again (CheckCall), with
// the protocol version and the job.
class RunAuthProcessor : public grpc::AuthMetadataProcessor {
 public:
  explicit RunAuthProcessor(RunCredentials expected)
      : expected_(std::move(expected)) {}

  bool IsBlocking() const override { return false; }

  grpc::Status Process(const InputMetadata& auth_metadata, grpc::AuthContext*,
                       OutputMetadata*, OutputMetadata*) override {
    auto value = [&](const char* key) -> std::string_view {
      auto it = auth_metadata.find(key);
      if (it == auth_metadata.end()) return {};
      return {it->second.data(), it->second.size()};
    };
    if (value(kRunHeader) != expected_.run_id ||
        !SameSecret(value(kSecretHeader), expected_.secret)) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          StrCat("not a task of run ", expected_.run_id,
                                 " (wrong run id or secret)"));
    }
    return grpc::Status::OK;
  }

 private:
  const RunCredentials expected_;
};

}  // namespace

std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(
    const RunCredentials& expected, bool loopback) {
  if (!expected.tls.on()) {
    if (!loopback) return grpc::InsecureServerCredentials();
    // Plaintext on the wire as InsecureServerCredentials (any plaintext
    // client talks to it), but only loopback peers, and with the auth
    // metadata processor that insecure credentials cannot carry.
    std::shared_ptr<grpc::ServerCredentials> local =
        grpc::experimental::LocalServerCredentials(LOCAL_TCP);
    local->SetAuthMetadataProcessor(
        std::make_shared<RunAuthProcessor>(expected));
    return local;
  }
  grpc::SslServerCredentialsOptions options(
      GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = expected.tls.ca_pem;
  options.pem_key_cert_pairs.push_back(
      {expected.tls.key_pem, expected.tls.cert_pem});
  std::shared_ptr<grpc::ServerCredentials> creds =
      grpc::SslServerCredentials(options);
  creds->SetAuthMetadataProcessor(std::make_shared<RunAuthProcessor>(expected));
  return creds;
}

void ConfigureServer(grpc::ServerBuilder* builder, const std::string& address,
                     const RunCredentials& expected, const ServerLimits& limits,
                     int* bound_port) {
  // gRPC's local credentials take peers of 127.0.0.1 and ::1 only (not the
  // rest of 127.0.0.0/8, which an SSH run's tasks may use as addresses).
  const std::string host = address.substr(0, address.rfind(':'));
  const bool local = host == "127.0.0.1" || host == "localhost" ||
                     host == "[::1]" || host == "::1";
  builder->AddListeningPort(address, MakeServerCredentials(expected, local),
                            bound_port);
  builder->SetMaxReceiveMessageSize(limits.max_receive_bytes);
  builder->SetMaxSendMessageSize(limits.max_send_bytes);
  grpc::ResourceQuota quota("dtf");
  quota.Resize(limits.max_memory_bytes);
  quota.SetMaxThreads(limits.max_threads);
  builder->SetResourceQuota(quota);
  builder->AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                              limits.max_streams_per_connection);
  // The sync server's threads poll with this timeout (gRPC's default is
  // 10 s), and shutting the server down can wait that long for them.
  builder->SetSyncServerOption(
      grpc::ServerBuilder::SyncServerOption::CQ_TIMEOUT_MSEC, 200);
  // One idle thread waits for new calls (gRPC's default keeps up to two);
  // each call in progress has a thread of its own. Every waiting thread
  // takes turns polling all of the process's connections and hands what it
  // reads on to the thread that waits for it: fewer of them, fewer such
  // hand-offs of a PS's Session steps (and of the chief's own stream to
  // the PS).
  builder->SetSyncServerOption(
      grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, 1);
}

}  // namespace dtf::rpc
