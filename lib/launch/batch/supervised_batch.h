// A batch job (batch_job.h) run by the launch supervisor (supervisor.h):
// one task per shard, started as a batch plan (PlanRequest::batch_command)
// on the backend of the profile, their outputs read back and merged once
// every task has exited 0. What differs between the backends that run this
// way (local processes, SSH hosts, a Slurm allocation) is where a task reads
// and writes its files, and how its shard gets back here: a
// ShardPlacement says it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/batch/batch_job.h"
#include "lib/launch/plan.h"
#include "lib/launch/profile.h"
#include "lib/launch/run_options.h"

namespace dtf::launch {

// The files of one task, as its host has them.
struct ShardTaskFiles {
  std::string dir;
  std::vector<std::string> inputs;
  std::string shard;
};

// "<task.dir>/<output's name>.shard-<k>-of-<w>": the shard of `task` in its
// task directory.
std::string TaskDirShardPath(const TaskPlan& task, const std::string& output,
                             int w);

// Where a backend's tasks read and write, and how their shards come back.
class ShardPlacement {
 public:
  virtual ~ShardPlacement() = default;

  // Fills in what `request` needs beyond the plan's common fields (files
  // to ship, a run id chosen here, where the run's directory goes).
  // `files` are the job's input files.
  virtual Status Prepare(const BatchJob& job,
                         const std::vector<std::string>& files,
                         PlanRequest* request) const;

  // The files of `task` (`job_dir`: the job as its host has it, see
  // BatchCommand). By default: job.dir, job.inputs and the shard beside
  // job.output.
  virtual ShardTaskFiles TaskFiles(const BatchJob& job,
                                   const std::vector<std::string>& files,
                                   const TaskPlan& task,
                                   const std::string& job_dir) const;

  // Where the shard of `task` is read here once Collect is done. By
  // default: beside job.output.
  virtual std::string CollectedShard(const BatchJob& job,
                                     const TaskPlan& task) const;

  // After the run (`ok`: it succeeded): brings the shards here, and
  // removes what the tasks left elsewhere whatever the outcome. The first
  // error of a fetch. By default nothing: the shards are here.
  virtual Status Collect(const BatchJob& job, const Plan& plan, bool ok,
                         const BatchIo& io) const;

  // After a run that failed to start, in `run_dir`: removes what the tasks
  // that did start left elsewhere. By default nothing.
  virtual void CleanFailedStart(const BatchJob& job, const std::string& run_dir,
                                const BatchIo& io) const;
};

class Run;

// What starts a run on a profile's backend: StartRun (supervisor.h), which
// the backends' factory (lib/launch/backends.cc) hands to each backend's
// batch runner, so that no backend links the factory above it.
using RunStarter = std::function<StatusOr<std::unique_ptr<Run>>(
    PlanRequest request, RunOptions options)>;

// A BatchRunner over the supervisor, for `profile`, placing files as
// `placement` says and starting its run with `start`.
std::unique_ptr<BatchRunner> NewSupervisedBatchRunner(
    Profile profile, std::unique_ptr<ShardPlacement> placement,
    RunStarter start);

}  // namespace dtf::launch
