// The rendezvous store of a Gloo allreduce run (lib/kernels/gloo.h) on the
// chief's Coordinator service: every rank sets and reads keys with the
// run's credentials (KvSet, KvGet in proto/dtf.proto), so the store opens
// no port of its own. The chief itself uses its service in process.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "lib/base/status.h"
#include "lib/kernels/gloo.h"
#include "lib/runtime/cluster/coordinator_service.h"
#include "lib/runtime/ps/run_credentials.h"
#include "proto/dtf.grpc.pb.h"

namespace dtf::runtime {

// The store of the Coordinator at `chief` (host:port), for `task`
// ("worker:1"). Get asks again while the key is not set or the chief is
// unreachable, for at most its timeout (DeadlineExceeded then, saying
// which key and the last answer); a refusal (a wrong secret:
// PermissionDenied) ends it at once, and so does `cancel` (may be null;
// Cancelled).
class CoordinatorStore final : public kernels::KeyValueStore {
 public:
  CoordinatorStore(std::string chief, const rpc::RunCredentials& credentials,
                   std::string task, const std::atomic<bool>* cancel);

  Status Set(const std::string& key, std::string_view value) override;
  StatusOr<std::string> Get(const std::string& key,
                            std::chrono::milliseconds timeout) override;

 private:
  const std::string chief_;
  const rpc::RunCredentials credentials_;
  const std::string task_;
  const std::atomic<bool>* const cancel_;
  std::unique_ptr<rpc::Coordinator::Stub> stub_;
};

// The store of `service`, the chief's own, in this process.
class LocalCoordinatorStore final : public kernels::KeyValueStore {
 public:
  LocalCoordinatorStore(CoordinatorService* service,
                        const std::atomic<bool>* cancel)
      : service_(service), cancel_(cancel) {}

  Status Set(const std::string& key, std::string_view value) override;
  StatusOr<std::string> Get(const std::string& key,
                            std::chrono::milliseconds timeout) override;

 private:
  CoordinatorService* const service_;
  const std::atomic<bool>* const cancel_;
};

}  // namespace dtf::runtime
