// The names of gen-records' output files: "part-00003-of-00008.tfrecord"
// (plus the compression suffix) for shard 3 of 8, and how to find the ones
// a directory already holds. The writer (lib/data/shard_set.h) and
// gen-records' callers share them.
#pragma once

#include <string>
#include <vector>

#include "lib/data/compression.h"

namespace dtf {

// Shard file name: "part-00003-of-00008.tfrecord" plus the compression suffix.
std::string ShardFileName(int shard, int shards, Compression compression);

// Names of shard files (and their index files) already in `dir`, sorted;
// empty when there are none or `dir` cannot be read.
std::vector<std::string> ExistingShardFiles(const std::string& dir);

}  // namespace dtf
