// A worker of an allreduce run (train.mode = "allreduce"): no parameter
// servers. Every worker holds the whole model on its device, starting from
// worker 0's values; each step it computes the gradients of its own share
// of the input, averages them with every other worker's (over NCCL between
// GPUs, over Gloo between CPU processes: lib/kernels/collective.h), and
// applies the same optimizer update, so the
// replicas stay equal. Sparse gradients are densified for the average
// (Horovod's sparse_as_dense), so embedding tables get dense updates.
//
// Before each step the workers agree that every one of them still has a
// batch; the run ends for all at the first that has none, or when one is
// cancelled. The ranks meet through worker 0's (the chief's) Coordinator
// service: NCCL's unique id, or Gloo's addresses. The chief also evaluates,
// writes TensorBoard events, the checkpoint and the exported model as `dtf
// train` does, and ends the run.
#pragma once

#include "lib/base/status.h"
#include "lib/data/job_file.h"
#include "lib/runtime/train/train_types.h"
#include "lib/runtime/train/worker_options.h"

namespace dtf::runtime {

// Trains this worker's share (options.ps is unused), on job.train.device.
// The chief's result holds the final
// evaluation and the paths it wrote; other workers' only their own figures.
StatusOr<TrainResult> RunAllreduceWorker(const JobFile& job,
                                         const WorkerOptions& options);

}  // namespace dtf::runtime
