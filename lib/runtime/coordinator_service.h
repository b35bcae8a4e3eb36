// The chief's Coordinator service: every other task heartbeats to it; it
// knows who is alive, who finished, and the run's progress, which
// `dtf status` reads. When the run is over it answers heartbeats with
// shutdown = true. In an allreduce run it also hands out the NCCL unique id
// the chief made. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/rpc/call.h"
#include "proto/dtf.grpc.pb.h"

namespace dtf::runtime {

class CoordinatorService final : public rpc::Coordinator::Service {
 public:
  // `tasks`: every task of the run ("ps:0", "worker:1", ...) with its
  // address; the chief itself included.
  CoordinatorService(rpc::RunCredentials credentials,
                     std::vector<std::pair<std::string, std::string>> tasks);

  grpc::Status Heartbeat(grpc::ServerContext* context,
                         const rpc::HeartbeatRequest* request,
                         rpc::HeartbeatResponse* response) override;
  grpc::Status Status(grpc::ServerContext* context,
                      const rpc::StatusRequest* request,
                      rpc::StatusResponse* response) override;
  // The id SetCommId set; UNAVAILABLE before that.
  grpc::Status CommId(grpc::ServerContext* context,
                      const rpc::CommIdRequest* request,
                      rpc::CommIdResponse* response) override;

  // The chief's own progress and state.
  void Update(const std::string& task, const std::string& state, int64_t step,
              double loss, double examples_per_sec);
  void SetRunState(const std::string& state, int64_t global_step);
  void SetEvalMetrics(const std::vector<std::pair<std::string, double>>& m);
  // The NCCL unique id of an allreduce run (lib/kernels/collective.h),
  // which CommId hands to the other workers from now on.
  void SetCommId(std::string id);
  // From now on heartbeats answer stop_training = true: training stopped
  // early, every worker ends as when its data runs out (parameter servers
  // keep serving until EndRun).
  void StopTraining();
  // From now on heartbeats answer shutdown = true.
  void EndRun();
  // Workers (other than `self`) that are neither done nor silent for
  // `timeout`.
  std::vector<std::string> RunningWorkers(const std::string& self,
                                          std::chrono::seconds timeout) const;

 private:
  struct Task {
    std::string address;
    std::string state = "starting";
    int64_t step = 0;
    double loss = 0;
    double examples_per_sec = 0;
    std::chrono::steady_clock::time_point last_heartbeat;
    bool heard = false;
  };
  const rpc::RunCredentials credentials_;
  const std::chrono::steady_clock::time_point start_;
  mutable std::mutex mu_;
  std::map<std::string, Task> tasks_;
  std::vector<std::string> order_;
  std::string run_state_ = "running";
  int64_t global_step_ = 0;
  std::vector<std::pair<std::string, double>> eval_;
  bool ended_ = false;
  bool stop_training_ = false;
  std::string comm_id_;
};

// Asks the chief's Coordinator at `chief` (host:port) for the NCCL unique
// id, again every half second while the chief is unreachable or has none
// yet, for at most `timeout`: DeadlineExceeded then, saying so; Cancelled
// when `cancel` (may be null) is set; other errors at once.
StatusOr<std::string> FetchCommId(const std::string& chief,
                                  const rpc::RunCredentials& credentials,
                                  const std::string& task,
                                  std::chrono::seconds timeout,
                                  const std::atomic<bool>* cancel);

}  // namespace dtf::runtime
