// A batch job (lib/launch/batch/batch_job.h) on an SSH profile: what goes
// to the hosts and what comes back (man/dtf-predict.1, "Sharded scoring").
//
// The job's directory (the model) is always shipped, in the run's job
// archive (the entry kShippedDir), as `dtf launch` always ships the job;
// the input files go in it too when the profile says with_data = true (as
// "inputs/<position>-<name>", so they sort on the host as they do here),
// else each must be a readable file at the same absolute path on every
// host, which the preflight checks (as `dtf launch` checks a job's
// records). Each task writes its shard and index in its task directory on
// its host; the launcher fetches them over SFTP and removes them there,
// whatever the outcome.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/batch/batch_job.h"
#include "lib/launch/batch/supervised_batch.h"
#include "lib/launch/plan.h"
#include "lib/launch/profile.h"

namespace dtf::launch {

// The archive's entry for the job's directory.
inline constexpr char kShippedDir[] = "model";

// What the hosts get: the files of `dir` under kShippedDir and, with
// `with_data`, the input files (`files`, in the order the shards split
// them); otherwise `files` are to be found on the hosts.
StatusOr<BatchFiles> ShippedBatchFiles(const std::string& dir,
                                       const std::vector<std::string>& files,
                                       bool with_data);

// The input files as a task on a host reads them: under the unpacked
// archive (whose directory is `shipped_dir`) with `with_data`, else `files`.
std::vector<std::string> RemoteInputs(const std::string& shipped_dir,
                                      const std::vector<std::string>& files,
                                      bool with_data);

// For every task of `plan`: with `fetch`, copies its shard output and index
// from its task directory on its host (TaskDirShardPath) to
// ShardOutputPath(output, k, w) and its index here; then, whatever
// happened, removes them (and any temporary file beside them) on the host.
// The first fetch error, naming the task and its host; a host where the
// removal failed gets a warning naming it.
Status FetchRemoteShards(const Plan& plan, const std::string& output, int w,
                         bool fetch, const BatchIo& io);

// After a run that failed to start: FetchRemoteShards without fetching,
// for the tasks of the run in `run_dir` that were started (its plan.json
// and tasks.json; nothing when the run had not got that far).
void RemoveRemoteShardsOfFailedStart(const std::string& run_dir,
                                     const std::string& output, int w,
                                     const BatchIo& io);

// The BatchRunner of an SSH profile: the supervisor's run, with the files
// shipped and the shards fetched as above.
std::unique_ptr<BatchRunner> NewSshBatchRunner(Profile profile,
                                               RunStarter start);

}  // namespace dtf::launch
