// A task's heartbeats to the chief's Coordinator (serve.h): once a second
// from a background thread, and a position delay after the last one once a
// training step finished since (PositionHeartbeatDelay: in a run of up to
// ten workers, about ten a second).
// Each carries the task's state, step, loss, throughput and input position;
// the answers say when the run is over, when training stopped early and
// when the chief's watchdog took this task for dead.
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "lib/data/input_pipeline.h"
#include "lib/rpc/credentials.h"
#include "lib/runtime/cluster/task_state.h"
#include "proto/dtf.grpc.pb.h"

namespace dtf::runtime {

// Sets `stop` when the chief says the run is over, `stop_training` when it
// stopped training early, `stalled` when its watchdog took this process for
// dead, `lost` (and `stop`) when it has been unreachable for `timeout`.
class Heartbeat {
 public:
  // Starts the thread; `task` names this task to the chief at `chief`.
  // A heartbeat goes out every `period` (HeartbeatPeriod); a step's
  // position `position_delay` after the heartbeat before it
  // (PositionHeartbeatDelay of the run's workers).
  Heartbeat(const std::string& chief, rpc::RunCredentials creds,
            std::string task, std::chrono::seconds timeout,
            std::chrono::milliseconds period,
            std::chrono::milliseconds position_delay);
  // Ends the thread (and a call in flight) at once.
  ~Heartbeat();

  void Set(TaskState state, int64_t step, double loss, double eps);
  // Sends what was Set last now, and waits until the chief has answered
  // it, a heartbeat has failed (the chief gone: a process stopped with
  // the others), the heartbeats end, or `within` has passed.
  void Flush(std::chrono::milliseconds within);
  // The training loop's steps (TrainHooks::on_step): the task is running,
  // its input at `position`. The first call (the loop starts) waits until
  // the chief has heard from this task once (or the chief is lost, or the
  // heartbeats end): a worker steps only once the chief knows it, so every
  // checkpoint after its first step can record its input position.
  void Steps(int64_t steps_done, int64_t global_step,
             const InputPosition& position);

  // The input shards the chief has this worker read (HeartbeatResponse.
  // input; ShardedInput::Assigned): nullopt while it has handed none on
  // to or from this task. Waits until the chief has heard this task once
  // (or it is lost, or the heartbeats end), so that a new process learns
  // of a shard handed on before it reads a batch.
  AssignedShards InputShards();
  // Input shards are not taken from an answer older than this: waits for
  // a fresh one then (a process back from a silence, whose shard the
  // chief may have handed on meanwhile). Half the heartbeat_timeout after
  // which the chief takes a worker for dead; 0: any answer.
  void SetFreshWithin(std::chrono::milliseconds within);
  // This process stopped reading `shard` at `at` (ShardedInput::Released):
  // said with the next heartbeats, until the chief answers one.
  void Released(int shard, const InputPosition& at);

  std::atomic<bool> stop{false};
  std::atomic<bool> stop_training{false};
  std::atomic<bool> stalled{false};
  std::atomic<bool> lost{false};
  // The last call failed: the chief does not answer now.
  std::atomic<bool> failing{false};

  // Heartbeats sent so far, and the CPU seconds the heartbeat thread used
  // (what a task pays for them; bench/scale reads both).
  int64_t sent() const { return sent_.load(); }
  // The number that tells this process of the task from its others.
  uint64_t incarnation() const { return incarnation_; }
  double CpuSeconds();

 private:
  void Run();

  std::unique_ptr<rpc::Coordinator::Stub> stub_;
  rpc::RunCredentials creds_;
  std::string task_;
  std::chrono::seconds timeout_;
  const std::chrono::milliseconds period_;
  const std::chrono::milliseconds position_delay_;
  const uint64_t incarnation_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool exit_ = false;
  grpc::ClientContext* call_ = nullptr;  // the call in flight, under mu_
  TaskState state_ = TaskState::kStarting;
  int64_t step_ = 0;
  int64_t steps_done_ = 0;
  // InputPosition's four numbers; empty before the training loop starts.
  std::vector<int64_t> position_;
  bool stepped_ = false;  // a step finished since the last heartbeat
  bool heard_ = false;    // a heartbeat was answered
  AssignedShards input_;  // the last answer's
  // When the request of the last answer was sent; of the last call that
  // ended, answered or failed.
  std::chrono::steady_clock::time_point answered_;
  std::chrono::steady_clock::time_point ended_;
  std::chrono::milliseconds fresh_within_{0};
  std::vector<InputShard> released_;
  double loss_ = 0, eps_ = 0;
  std::atomic<int64_t> sent_{0};
  std::thread thread_;
};

}  // namespace dtf::runtime
