// The worker roles of `dtf serve` (serve.h): a worker of a parameter-server
// run (RunWorker) or of an allreduce run (RunAllreduceWorker), its progress
// carried to the chief by its heartbeats; and worker 0, the chief, with the
// Coordinator it serves and the run it ends.
#pragma once

#include "grpcpp/grpcpp.h"
#include "lib/base/status.h"
#include "lib/runtime/serve/serve_task.h"
#include "lib/runtime/train/train_types.h"

namespace dtf::runtime {

// The chief: creates t->coordinator over every task of the cluster and adds
// it to `builder`.
void AddCoordinator(ServeTask* t, grpc::ServerBuilder* builder);

// Trains this worker's share to its end; the result is RunWorker's (or
// RunAllreduceWorker's). A failed chief ends the run, and in a
// parameter-server run tells every PS to exit. REQUIRES: StartTask(t)
// succeeded.
StatusOr<TrainResult> ServeWorker(ServeTask* t);

}  // namespace dtf::runtime
