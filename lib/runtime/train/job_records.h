// Where a job's TFRecord shards are: what `dtf gen-records --job` wrote under
// [data] records, one subdirectory per split; and how its training input
// caches them.
#pragma once

#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/data/input_pipeline.h"
#include "lib/data/job_file.h"

namespace dtf::runtime {

struct JobRecords {
  // The training split: "train" when the job has splits of that name, else
  // its first split; "" when the job has no splits.
  std::string train_split;
  std::string train_dir;
  std::vector<std::string> train;
  // The evaluation split: the first of "eval", "test", "validation" or
  // "valid" the job has, else its second split; "" when none. `eval` is
  // empty when there is no such split.
  std::string eval_split;
  std::string eval_dir;
  std::vector<std::string> eval;
};

// The TFRecord shards (part-*.tfrecord*, index files excluded) in `dir`,
// sorted; empty when there are none or `dir` does not exist.
std::vector<std::string> ListShards(const std::string& dir);
// The same for a local or s3:// `dir`; a listing that fails (access denied,
// no such bucket) is an error naming the bucket.
StatusOr<std::vector<std::string>> ListShardsAnywhere(const std::string& dir);

// NotFound, naming the directory and the command that writes it, when the
// training split has no shards, or the evaluation split is named but has
// none.
StatusOr<JobRecords> FindJobRecords(const JobFile& job);

// The input cache a training reader uses: [train] input_cache,
// input_cache_memory_mb and input_cache_dir, with `parse_threads` (at least
// 1) parsing the first epoch: the process's compute threads.
InputCacheOptions TrainInputCache(const TrainSpec& train, int parse_threads);
// "input cache: R rows of F files, M MiB in memory[, D MiB in PATH]"; empty
// when the pipeline had no cache.
std::string InputCacheNote(const InputCacheStats& stats);

}  // namespace dtf::runtime
