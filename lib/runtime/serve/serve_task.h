// What every role of `dtf serve` (serve.h) shares while a task runs: its
// name and credentials, its gRPC server and the services on it, its
// heartbeats to the chief, and the watcher thread that stops it (the
// caller's cancel, a lost chief, the step-progress watchdog). Serve sets a
// task up (ConfigureTaskServer, the role's services, StartTask) and hands it
// to its role (serve_ps.h, serve_worker.h), which ends with FinishTask.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "grpcpp/grpcpp.h"
#include "lib/base/status.h"
#include "lib/data/job_file.h"
#include "lib/rpc/credentials.h"
#include "lib/runtime/cluster/coordinator_service.h"
#include "lib/runtime/ps/ps_service.h"
#include "lib/runtime/ps/ps_tls_server.h"
#include "lib/runtime/serve/heartbeat.h"
#include "lib/runtime/serve/serve_options.h"
#include "lib/runtime/train/train_types.h"

namespace dtf::runtime {

struct ServeTask {
  // `job` and `options` outlive the task.
  ServeTask(const JobFile& job, const ServeOptions& options);
  // Stops what FinishTask stops, when it has not run.
  ~ServeTask();

  void Note(std::string_view text) const {
    if (options.on_note) options.on_note(text);
  }
  // The error of a chief unreachable for train.coordinator_timeout.
  Status ChiefLost() const;

  const JobFile& job;
  const ServeOptions& options;
  const bool ps_role;
  const bool chief;
  const bool allreduce;
  // "ps:<i>" or "worker:<i>".
  const std::string task;
  // host:port from the cluster, and the address the server binds (its
  // host resolved) and the port it got; set by ConfigureTaskServer.
  std::string address;
  std::string listen_address;
  int bound_port = 0;
  // The caller's; Serve adds the job's fingerprint (JobFingerprint) first.
  rpc::RunCredentials creds;

  // A PS's service and the chief's Coordinator; null for other roles.
  std::unique_ptr<PsService> ps_service;
  // A PS's Session over TLS, when the run has TLS; ended before the
  // service's store goes.
  std::unique_ptr<PsTlsServer> ps_sessions;
  std::unique_ptr<CoordinatorService> coordinator;
  // Null for workers other than the chief, which serve no RPCs.
  std::unique_ptr<grpc::Server> server;
  // Every task but the chief.
  std::unique_ptr<Heartbeat> heartbeat;
  // The one flag for the task to stop on: the caller's, the heartbeat's, or
  // the watchdog's.
  std::atomic<bool> stop{false};
  // Set once the training thread has returned: nothing to abandon then.
  std::atomic<bool> returned{false};
  // Why the task must end (the watchdog's verdict), once it must.
  mutable std::mutex fatal_mu;
  Status fatal;
  std::atomic<bool> watching{true};
  std::thread watcher;
  // When the task was set up, and whether a worker noted its first
  // training step's time since (bench/scale reads the note).
  const std::chrono::steady_clock::time_point started =
      std::chrono::steady_clock::now();
  std::atomic<bool> first_step_noted{false};
};

// Checks the task's place in the cluster, resolves its listen address and
// configures `builder` (whose services the roles then add). Errors name the
// task.
Status ConfigureTaskServer(ServeTask* t, grpc::ServerBuilder* builder);

// Starts the server (a PS and the chief), writes options.ready_file,
// starts the heartbeats (every task but the chief), the chief's watchdog
// and the watcher thread.
Status StartTask(ServeTask* t, grpc::ServerBuilder* builder);

// Stops the watcher, the heartbeats and the server (within 2 s), and
// returns `result`.
StatusOr<TrainResult> FinishTask(ServeTask* t, StatusOr<TrainResult> result);

}  // namespace dtf::runtime
