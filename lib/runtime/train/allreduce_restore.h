// What a restored allreduce run starts from (`dtf serve --restore`, every
// rank at once: a restart of the whole run, or `dtf launch --resume`).
//
// Only rank 0, the chief, reads the run's checkpoint (the other ranks may be
// on hosts that do not have it): it restores the variables, optimizer
// states and global step into its replica, and the AllreduceResume below
// (global step, optimizer update counts, every input shard's position) is
// broadcast from it, packed as floats, with the variables and slots
// (update_allreduce.cc), so that every replica restarts identical. The
// normalizer statistics are not sent: every rank fits them over every
// training shard (BuildWorkerModel), as the run did when it started.
//
// Input positions: the input has one shard per worker slot, whatever
// number of workers take part (allreduce_layout.h); every rank reads one
// batch a step, in lockstep, of its shards in turn. Each shard resumes at
// the position the checkpoint recorded for it (on the CPU every shard's
// after the checkpoint's step, exchanged with the step's vote:
// Update::committed_positions; on a GPU its reader's last report to the
// chief, as in a parameter-server run), or, where none is recorded, at its
// input's start fast-forwarded by the restored global step's batches:
// exactly where it was (the input order is a function of the seed).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/data/input_pipeline.h"
#include "lib/data/job_file.h"
#include "lib/kernels/optimizer.h"
#include "lib/runtime/model/feature_layer.h"
#include "lib/runtime/model/model.h"
#include "lib/runtime/train/train_hooks.h"
#include "lib/runtime/train/worker_options.h"

namespace dtf::runtime {

struct AllreduceResume {
  // Whether rank 0 restored a checkpoint (else every rank starts afresh).
  bool restored = false;
  int64_t global_step = 0;
  // The optimizer's update count of each variable (model order).
  std::vector<int64_t> update_counts;
  // Input shard i's recorded position at index i (worker slot i's shard:
  // allreduce_layout.h; nullopt: not recorded).
  std::vector<std::optional<InputPosition>> positions;

  bool operator==(const AllreduceResume&) const = default;
};

// The number of floats PackAllreduceResume makes for a model of
// `num_variables` variables and `num_workers` input shards (the run's
// worker slots; the same on every rank: what each rank broadcasts into).
size_t AllreduceResumeSize(size_t num_variables, int num_workers);
// `resume` as floats that a broadcast carries exactly (16-bit pieces);
// `update_counts` must have num_variables entries and `positions` at most
// num_workers (the rest count as not recorded).
std::vector<float> PackAllreduceResume(const AllreduceResume& resume,
                                       size_t num_variables, int num_workers);
// The inverse; Internal when `packed` is not what PackAllreduceResume made.
StatusOr<AllreduceResume> UnpackAllreduceResume(std::span<const float> packed,
                                                size_t num_variables,
                                                int num_workers);

// Where input shard `rank` (worker slot `rank`'s) is read from: `at`,
// then `skip_batches` batches passed over.
struct RankInputStart {
  InputPosition at;
  int64_t skip_batches = 0;
  // For the note: "its recorded position", ...
  std::string whence;
};
RankInputStart InputStartFor(const AllreduceResume& resume, int rank);

// Rank 0 with --restore: restores this run's own checkpoint in
// train.output_dir (FindRunCheckpoint: one of another job fingerprint, or
// a corrupt one, is an error naming it; none, or another run's, is noted
// and the run starts from the initial values) into `layer`, `model` and
// `states` (parallel to the model's variables), and returns what the other
// ranks are sent.
StatusOr<AllreduceResume> RestoreAllreduceChief(
    const JobFile& job, const WorkerOptions& options, const TrainHooks& hooks,
    FeatureLayer* layer, Model* model,
    std::vector<kernels::OptimizerState>* states);

}  // namespace dtf::runtime
