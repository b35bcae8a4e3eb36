// The ids one reader's share of a job's training records holds over its
// epochs, in the order a worker reads them (the input trace tests count
// what the workers' steps read against it).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "lib/data/input_pipeline.h"
#include "lib/data/job_file.h"
#include "lib/runtime/train/job_records.h"

namespace dtf::runtime::testing {

// The int64 `column` of shard `shard` of `shards` over `epochs` epochs,
// through the job's shuffle buffer and seed.
inline std::vector<int64_t> ShardIds(const JobFile& job,
                                     const std::string& column, int shard,
                                     int shards, int64_t epochs) {
  std::vector<int64_t> ids;
  StatusOr<JobRecords> records = FindJobRecords(job);
  EXPECT_TRUE(records.ok()) << records.status();
  if (!records.ok()) return ids;
  InputPipelineOptions o;
  o.files = records->train;
  o.features = {FixedLenFeature(column, FeatureType::kInt64)};
  o.reader_index = shard;
  o.reader_count = shards;
  o.epochs = epochs;
  o.shuffle_buffer_size = job.train.shuffle_buffer;
  o.seed = uint64_t(job.train.seed);
  StatusOr<std::unique_ptr<InputPipeline>> input = InputPipeline::Create(o);
  EXPECT_TRUE(input.ok()) << input.status();
  if (!input.ok()) return ids;
  Batch batch;
  while (true) {
    StatusOr<bool> more = (*input)->Next(&batch);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) break;
    const Column* c = batch.Find(column);
    for (int64_t r = 0; r < batch.rows; ++r) ids.push_back(c->int64s[r]);
  }
  return ids;
}

}  // namespace dtf::runtime::testing
