// The rendezvous store of a Gloo allreduce run (lib/kernels/gloo.h) on the
// chief's Coordinator service: every rank sets and reads keys with the
// run's credentials (KvSet, KvGet in proto/dtf.proto), so the store opens
// no port of its own. The chief itself uses its service in process.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
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
// ("worker:1") as process `incarnation` (its heartbeats'; 0: not told).
// Get asks again while the key is not set or the chief is unreachable or
// refuses this process for now (a chief whose ranks met without it), for at
// most its timeout (DeadlineExceeded then, saying which key and the last
// answer); Set asks again while the chief is unreachable or refuses for
// now, for at most `set_timeout`. A refusal for good (a wrong secret:
// PermissionDenied) ends either at once, and so does `cancel` (may be null;
// Cancelled).
class CoordinatorStore final : public kernels::KeyValueStore {
 public:
  CoordinatorStore(
      std::string chief, const rpc::RunCredentials& credentials,
      std::string task, const std::atomic<bool>* cancel,
      uint64_t incarnation = 0,
      std::chrono::milliseconds set_timeout = std::chrono::seconds(30));

  Status Set(const std::string& key, std::string_view value) override;
  StatusOr<std::string> Get(const std::string& key,
                            std::chrono::milliseconds timeout) override;

 private:
  // Calls `call` (`what`, "KvGet gloo/1") until it answers, is refused for
  // good, `cancel` is set or `timeout` has passed (DeadlineExceeded saying
  // `unmet` and the last answer); UNAVAILABLE and DEADLINE_EXCEEDED are
  // asked again, and NOT_FOUND when `again_if_not_found`.
  Status Ask(const std::string& what, const std::string& unmet,
             std::chrono::milliseconds timeout, bool again_if_not_found,
             const std::function<grpc::Status(grpc::ClientContext*)>& call);

  const std::string chief_;
  const rpc::RunCredentials credentials_;
  const std::string task_;
  const std::atomic<bool>* const cancel_;
  const uint64_t incarnation_;
  const std::chrono::milliseconds set_timeout_;
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
