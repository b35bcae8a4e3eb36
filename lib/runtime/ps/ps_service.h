// A parameter server on gRPC: the ParameterServer service (proto/dtf.proto)
// over a ParamStore (param_store.h), which holds the variables and decides
// what every push and pull does. Each call's credentials are checked
// (lib/rpc/call.h) before anything else.
// Thread-safe: gRPC calls it from many threads.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "lib/base/status.h"
#include "lib/data/job_file.h"
#include "lib/rpc/credentials.h"
#include "lib/runtime/ps/param_store.h"
#include "proto/dtf.grpc.pb.h"

namespace dtf::runtime {

struct PsOptions : StoreOptions {
  rpc::RunCredentials credentials;
};

class PsService final : public rpc::ParameterServer::Service {
 public:
  // A ParamStore::Create(job, options) served on gRPC.
  static StatusOr<std::unique_ptr<PsService>> Create(const JobFile& job,
                                                     const PsOptions& options);
  ~PsService() override;

  // Steps, pushes and pulls of one worker on one stream (proto/dtf.proto),
  // read and written as raw messages (tensor_wire.h); ps_session.cc.
  grpc::Status RawSession(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>* stream);
  grpc::Status WorkerDone(grpc::ServerContext* context,
                          const rpc::WorkerDoneRequest* request,
                          rpc::WorkerDoneResponse* response) override;
  grpc::Status Shutdown(grpc::ServerContext* context,
                        const rpc::ShutdownRequest* request,
                        rpc::ShutdownResponse* response) override;

  // The PS's shard of a sharded checkpoint (ParamStore::SaveShard).
  grpc::Status SaveShard(grpc::ServerContext* context,
                         const rpc::SaveShardRequest* request,
                         rpc::SaveShardResponse* response) override;

  // The port of the Session over TLS (ps_tls_server.h); 0: none.
  grpc::Status SessionAddress(grpc::ServerContext* context,
                              const rpc::SessionAddressRequest* request,
                              rpc::SessionAddressResponse* response) override;
  void set_session_port(int port) { session_port_ = port; }

  ParamStore& store() { return *store_; }
  // The store's (param_store.h), for the serving loop.
  void Tick() { store_->Tick(); }
  bool WaitForShutdown(std::chrono::milliseconds timeout) {
    return store_->WaitForShutdown(timeout);
  }
  std::string shutdown_reason() const { return store_->shutdown_reason(); }
  int64_t global_step() const { return store_->global_step(); }

 private:
  PsService(std::unique_ptr<ParamStore> store, rpc::RunCredentials credentials);
  // Serves Session with RawSession (the raw stream) above instead of the
  // generated (parsed) one; true.
  bool ServeRawSession();

  const bool raw_session_ = ServeRawSession();

  const std::unique_ptr<ParamStore> store_;
  const rpc::RunCredentials credentials_;
  std::atomic<int> session_port_{0};
};

}  // namespace dtf::runtime
