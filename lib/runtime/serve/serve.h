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

#include <string>

#include "lib/base/status.h"
#include "lib/data/job_file.h"
#include "lib/runtime/serve/serve_options.h"
#include "lib/runtime/train/train_types.h"

namespace dtf::runtime {

// Runs the task to its end. A worker's result is RunWorker's; a PS returns
// an empty result.
StatusOr<TrainResult> Serve(const JobFile& job, const ServeOptions& options);

// A fingerprint of what every task of a run must agree on: the model
// definition, the training settings and the data layout.
std::string JobFingerprint(const JobFile& job);

}  // namespace dtf::runtime
