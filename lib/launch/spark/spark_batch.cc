#include "lib/launch/spark/spark_batch.h"

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lib/launch/batch/supervised_batch.h"
#include "lib/launch/spark/spark_profile.h"

namespace dtf::launch {
namespace {

namespace fs = std::filesystem;

class SparkPlacement : public ShardPlacement {
 public:
  Status Prepare(const BatchJob& job, const std::vector<std::string>& /*files*/,
                 PlanRequest* request) const override {
    if (!job.runs_dir_given &&
        !spark::SparkTableOf(request->profile).run_dir.empty()) {
      request->runs_dir.clear();
    }
    // The runtime shipped to the executors is packed where dtf predict
    // runs, not beside the model.
    std::error_code ec;
    request->batch_files.pack_dir =
        fs::absolute(".dtf/pack", ec).lexically_normal().string();
    return OkStatus();
  }

  ShardTaskFiles TaskFiles(const BatchJob& job,
                           const std::vector<std::string>& /*files*/,
                           const TaskPlan& task,
                           const std::string& /*job_dir*/) const override {
    return {job.dir, job.inputs,
            TaskDirShardPath(task, job.output, job.shards)};
  }

  std::string CollectedShard(const BatchJob& job,
                             const TaskPlan& task) const override {
    return TaskDirShardPath(task, job.output, job.shards);
  }
};

}  // namespace

std::unique_ptr<BatchRunner> NewSparkBatchRunner(Profile profile,
                                                 RunStarter start) {
  return NewSupervisedBatchRunner(
      std::move(profile), std::make_unique<SparkPlacement>(), std::move(start));
}

}  // namespace dtf::launch
