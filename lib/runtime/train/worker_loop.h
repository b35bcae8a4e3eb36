// What the two kinds of distributed worker (worker.cc, allreduce_worker.cc)
// share around the training loop: the model they build, the input share
// they read, and the chief's duties (chief.h) for worker 0.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "lib/base/status.h"
#include "lib/data/input_pipeline.h"
#include "lib/data/job_file.h"
#include "lib/kernels/context.h"
#include "lib/runtime/model/feature_layer.h"
#include "lib/runtime/model/model.h"
#include "lib/runtime/train/job_records.h"
#include "lib/runtime/train/train_hooks.h"
#include "lib/runtime/train/train_types.h"
#include "lib/runtime/train/update.h"
#include "lib/runtime/train/worker_options.h"

namespace dtf::runtime {

// The callbacks of `options` as TrainHooks.
TrainHooks WorkerHooks(const WorkerOptions& options);

// Where a resumed worker's input starts (WorkerOptions::resume).
StatusOr<InputPosition> ResumePosition(const JobFile& job,
                                       const WorkerOptions& options,
                                       const TrainHooks& hooks);

// Where a worker resuming at `recorded` (ResumePosition's) reads on when
// the parameter servers went on without it (a worker restarted alone):
// the position they committed for its input shard with the last of its
// batches their variables hold, where that is past `recorded`. Else, and
// where `update` commits no positions or they cannot be asked, `recorded`.
InputPosition CommittedResumePosition(const WorkerOptions& options,
                                      const TrainHooks& hooks, Update& update,
                                      const InputPosition& recorded);

// Reads `n` batches of `input` (fewer where it ends first) and returns its
// position after them.
StatusOr<InputPosition> SkipBatches(InputPipeline& input, int64_t n);

// A worker's compute context: options.threads threads when set (dtf serve
// --threads), else the job's train.threads; when neither is set, on the
// CPU, SharedHostThreads (task_threads.h).
StatusOr<kernels::Context> MakeWorkerContext(const JobFile& job,
                                             const WorkerOptions& options);

// A worker's model: its records, the feature layer (normalizer statistics
// fit over every training shard) and the model built from it — without
// the rows of its tables when `sparse_rows` is false (a parameter-server
// worker: its pulls bring the rows each batch reads; Model::Create).
struct WorkerModel {
  JobRecords records;
  std::unique_ptr<FeatureLayer> layer;
  std::unique_ptr<Model> model;
};
StatusOr<WorkerModel> BuildWorkerModel(const JobFile& job,
                                       const kernels::Context& ctx,
                                       bool sparse_rows = true);

// Where a worker's input starts in place of ResumePosition's (an
// allreduce rank, which does not read the checkpoint): `at`, then
// `skip_batches` batches passed over; and the other input shards an
// allreduce rank reads beside its own (allreduce_layout.h), each from its
// own start, likewise.
struct ShardStart {
  int shard = 0;
  InputPosition at;
  int64_t skip_batches = 0;
};
struct WorkerInputStart {
  InputPosition at;
  int64_t skip_batches = 0;
  std::vector<ShardStart> others;
};

// The shards an allreduce rank reads, as TrainHooks::input_shards lists
// them: its own (`own_shard`, read with `own`) first, then `others` from
// their starts (past their skipped batches).
StatusOr<std::vector<InputShard>> StartShards(
    const InputPipelineOptions& own, int own_shard,
    const std::vector<ShardStart>& others);

// Trains this worker's share of the input with `update`; worker 0 is the
// chief. The input starts at `start` when given, else (with
// options.resume) at ResumePosition's.
StatusOr<TrainResult> RunWorkerLoop(
    const JobFile& job, const WorkerOptions& options, const TrainHooks& hooks,
    const kernels::Context& ctx, WorkerModel& built, Update& update,
    const std::optional<WorkerInputStart>& start = std::nullopt);

}  // namespace dtf::runtime
