// The parameter-server role of `dtf serve` (serve.h): its service, restored
// from the run's checkpoint when asked, and the loop that serves it until
// the chief tells it to exit, the chief is lost, or (interrupted) the
// chief has pulled its last checkpoint.
#pragma once

#include "grpcpp/grpcpp.h"
#include "lib/base/status.h"
#include "lib/runtime/serve/serve_task.h"
#include "lib/runtime/train/train_types.h"

namespace dtf::runtime {

// Creates t->ps_service (from this run's own checkpoint with
// options.restore) and adds it to `builder`.
Status AddPsService(ServeTask* t, grpc::ServerBuilder* builder);

// Serves until the run ends; an empty result, or why it ended otherwise.
// REQUIRES: StartTask(t) succeeded.
StatusOr<TrainResult> ServePs(ServeTask* t);

}  // namespace dtf::runtime
