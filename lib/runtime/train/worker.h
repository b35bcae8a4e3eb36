// A distributed worker: the trainer core of trainer.h with its variables on
// the parameter servers. Each step pulls the dense variables and only the
// embedding / wide-weight rows its batch touches, computes the gradients on
// a compact copy, and pushes them. Workers split the training shards
// (docs/input-pipeline.md: whole files each when there are at least as many
// files as workers, else records by index).
//
// Worker 0 is the chief: it also serves the Coordinator (heartbeats,
// status), evaluates, writes TensorBoard events, the checkpoints (the last
// and the best) and the exported model (the best), and ends the run: once
// every other worker finished (or went silent for train.heartbeat_timeout)
// it tells every PS to exit. When early stopping ends training the chief
// tells the other workers through its Coordinator (end_training) first.
#pragma once

#include "lib/base/status.h"
#include "lib/data/job_file.h"
#include "lib/runtime/train/train_types.h"
#include "lib/runtime/train/worker_options.h"

namespace dtf::runtime {

// Trains this worker's share. The chief's result holds the final evaluation
// and the paths it wrote; other workers' only their own figures.
StatusOr<TrainResult> RunWorker(const JobFile& job,
                                const WorkerOptions& options);

}  // namespace dtf::runtime
