// One task of a distributed run (`dtf serve`): a parameter server or a
// worker (worker 0 being the chief), with its gRPC server, its heartbeats to
// the chief, and the rules that end it:
//   - a PS runs until the chief tells it to exit, or until it cannot reach
//     the chief for train.coordinator_timeout seconds; cancelled, it serves
//     on for up to 10 s, until the chief (cancelled too) has pulled its
//     checkpoint and told it to exit;
//   - a worker runs until its data is done (the chief: until the run is
//     over), or until the chief is unreachable that long;
//   - a chief that fails tells every PS to exit before it returns;
//   - the chief's step-progress watchdog (train.stall_timeout): a worker
//     whose steps stall while its heartbeats come is told to exit (and
//     exits, its training thread returned or not: on_abandon); the chief
//     no longer waits for it. In an allreduce run, whose collectives wait
//     for every worker, such a worker, or one silent for
//     train.heartbeat_timeout, fails the run: the chief exits with an
//     error naming it.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/data/job_file.h"
#include "lib/rpc/credentials.h"
#include "lib/runtime/train/trainer.h"

namespace dtf::runtime {

enum class TaskRole { kPs, kWorker };

struct ServeOptions {
  TaskRole role = TaskRole::kWorker;
  int index = 0;
  std::vector<std::string> ps;       // host:port
  std::vector<std::string> workers;  // host:port; workers[0] is the chief
  rpc::RunCredentials credentials;
  // Written (atomically) with "host:port" once the server listens; empty:
  // none.
  std::string ready_file;
  int threads = 0;
  // A task restarted mid-run, or every task of a resumed run: start from
  // this run's last checkpoint (train.output_dir/checkpoint.dtf, when this
  // run wrote it; checkpoint_files.h): a PS its shard and step, a worker
  // its input position (WorkerOptions::resume). A checkpoint of another
  // run is not used; a corrupt one, or this run's of another job
  // fingerprint, is an error naming the file.
  bool restore = false;
  std::function<void(const TrainProgress&)> on_progress;
  std::function<void(const EvalReport&)> on_eval;
  std::function<void(std::string_view)> on_note;
  const std::atomic<bool>* cancel = nullptr;
  // A task that must end (the chief's step-progress watchdog took this
  // worker for dead; the chief of an allreduce run lost a worker) is
  // stopped; when its training thread has not returned 2 s later (frozen,
  // or blocked in a collective for good), this is called from another
  // thread with why, to report it and end the process; it must not return.
  // Unset: `why` goes to on_note and the process exits with status 1.
  std::function<void(const Status& why)> on_abandon;
};

// Runs the task to its end. A worker's result is RunWorker's; a PS returns
// an empty result.
StatusOr<TrainResult> Serve(const JobFile& job, const ServeOptions& options);

// A fingerprint of what every task of a run must agree on: the model
// definition, the training settings and the data layout.
std::string JobFingerprint(const JobFile& job);

}  // namespace dtf::runtime
