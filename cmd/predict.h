// dtf predict's flags and its two ways of running: scoring in this process
// (cmd/predict.cc; one shard of W with --shard/--of) and as a batch job over
// a profile's workers (cmd/predict_launch.cc, lib/launch/batch/).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cmd/app.h"
#include "lib/base/status.h"

namespace dtf::cli {

struct PredictFlags {
  std::string model;
  std::vector<std::string> input;
  std::string format = "jsonl";
  std::string output = "-";
  std::vector<std::string> keep;
  int64_t batch_size = 1024;
  int threads = 0;
  // --profile: score over the profile's workers ("" scores here).
  std::string profile;
  // --workers: the shard count with --profile; 0 takes the profile's.
  int workers = 0;
  // --runs-dir: where the run's directory goes; "" is ./.dtf/runs.
  std::string runs_dir;
  // --shard K --of W: score shard K of W only (what each task of --profile
  // runs); of = 0 scores everything. -1: not given.
  int shard = -1;
  int of = 0;
  // --shard-from-env NAME: K from that environment variable (a pod's
  // JOB_COMPLETION_INDEX).
  std::string shard_from_env;
  // --hold-for-fetch S: once the shard is written, wait at most S seconds
  // for it to be fetched (`dtf task shard-release`); 0: do not wait.
  int hold_for_fetch = 0;
  // --render DIR: with a Kubernetes profile, write the manifests only.
  std::string render_dir;
  // --ready-file: written once the task has started scoring.
  std::string ready_file;
  // --s3-credentials FILE: a task of a --profile run reads its S3 settings
  // and credentials from the run's file (cmd/task_storage.h).
  std::string s3_credentials;
};

// Loads f.model and checks --keep against its schema, as scoring does
// first: what --profile checks before it starts any task.
Status CheckPredictModel(const PredictFlags& f);

// The input files as the pipeline reads them: the patterns expanded, sorted,
// duplicates dropped. NotFound names a pattern that matches nothing.
StatusOr<std::vector<std::string>> PredictInputFiles(
    const std::vector<std::string>& patterns);

// Scores the input over the workers of f.profile and merges their outputs
// into f.output (lib/launch/batch/shards.h).
Status RunPredictOnProfile(const PredictFlags& f, Context* ctx);

}  // namespace dtf::cli
