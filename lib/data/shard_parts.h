// The output of a gen-records run spread over several processes
// (GenRecordsOptions::part): each process wrote its own shard files, whole,
// into a directory of its own laid out as the output directory (a
// subdirectory per split). ShardParts puts them into place in the real
// output directories, every run's together: all of them, or none (as a run
// of one process commits).
#pragma once

#include <string>
#include <vector>

#include "lib/base/status.h"

namespace dtf {

// One gen-records run (a source of a job) spread over parts.
struct ShardPartsRun {
  std::string out_dir;              // where its shards go
  std::vector<std::string> splits;  // {""} without splits
  // Each part's directory, in part order.
  std::vector<std::string> part_dirs;
};

// FailedPrecondition naming the directory and a shard, as a run of one
// process says it, when an output directory of `runs` already holds shards
// and `overwrite` is false.
Status CheckShardPartsOutput(const std::vector<ShardPartsRun>& runs,
                             bool overwrite);

// Moves the shard files (and their index files) of every part directory
// into place; with `overwrite`, shards the output directories held before
// are removed once every new one is in place. A failed move undoes those
// made (the older shards go back), so the output directories are as they
// were; the part directories are then left as they were too. Moves across
// file systems copy and then remove. DataLoss when two parts wrote the same
// file.
Status PublishShardParts(const std::vector<ShardPartsRun>& runs,
                         bool overwrite);

}  // namespace dtf
