// The checkpoint files of an output directory (docs/formats/checkpoint.md):
// which run and job wrote a checkpoint, the generations kept, and which one
// a restarted or resumed task of a run may restore.
//
// Generations: each checkpoint is written as <dir>/checkpoint-<step>.dtf
// (temporary file, fsync, rename), then becomes <dir>/checkpoint.dtf (a
// hard link renamed into place, so the newest is always whole); only then
// are the oldest generations beyond `keep` removed. Age is the files'
// modification time (then the step): a directory that two runs wrote keeps
// the last generations written, whichever run wrote them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/data/input_pipeline.h"
#include "lib/data/job_file.h"
#include "lib/runtime/checkpoint/bundle.h"

namespace dtf::runtime {

// "checkpoint-<step>.dtf".
std::string CheckpointGenerationName(int64_t step);

// The job fingerprint recorded in every checkpoint: 16 hex digits of a
// 64-bit FNV-1a hash over what gives the variables their names, shapes and
// meaning — the [schema], [features] and [model] tables (as model.toml
// writes them) and the optimizer type of each part (which slots there
// are). Batch size, epochs, steps, cadences, learning rates and the mode
// are not part of it: a run may go on with other values of those.
std::string CheckpointFingerprint(const JobFile& job);

// What a checkpoint says about itself (besides its variables).
struct CheckpointInfo {
  std::string path;
  // The run that wrote it ("" for `dtf train`, or a checkpoint older than
  // these entries) and CheckpointFingerprint of its job ("" when absent).
  std::string run_id;
  std::string job_fingerprint;
  int64_t global_step = 0;
  // Parameter-server runs: the global step of each PS's shard when the
  // chief pulled it; empty otherwise.
  std::vector<int64_t> ps_steps;
  // The chief's input position (worker 0 of a distributed run).
  InputPosition position;
  // Distributed runs: every worker's input position, worker i's at index i
  // (TrainState::worker_positions; nullopt: not known); empty when the
  // checkpoint records none.
  std::vector<std::optional<InputPosition>> worker_positions;
};
// DataLoss naming the file when an entry is malformed.
StatusOr<CheckpointInfo> ReadCheckpointInfo(const Bundle& bundle);

struct CheckpointGeneration {
  std::string path;
  int64_t step = 0;
};
// The generations in `dir`, newest first (none when `dir` does not exist).
std::vector<CheckpointGeneration> ListCheckpointGenerations(
    const std::string& dir);

// Writes `bundle` as the generation of `step` in `dir`, makes it
// checkpoint.dtf, then removes the oldest generations beyond `keep` (>= 1).
// Errors name the file; on an error no older generation has been removed.
Status WriteCheckpointGeneration(const Bundle& bundle, const std::string& dir,
                                 int64_t step, int64_t keep);

// The checkpoint that a task of run `run_id`, job fingerprint `fingerprint`
// may restore: <dir>/checkpoint.dtf, or the newest sharded checkpoint of
// <dir> (sharded_checkpoint.h) when it is newer — its training state, as a
// Bundle whose path() is its prefix — when that run wrote it. nullopt when
// there is none, or when another run (or `dtf train`) wrote it — then
// `*why` says so, naming the file and its run. A file that is not a whole,
// valid checkpoint is DataLoss naming it; the run's own checkpoint of
// another job fingerprint is FailedPrecondition naming it and both
// fingerprints. Nothing is written.
StatusOr<std::optional<Bundle>> FindRunCheckpoint(const std::string& dir,
                                                  std::string_view run_id,
                                                  std::string_view fingerprint,
                                                  std::string* why);

}  // namespace dtf::runtime
