// dtf predict --profile on an SSH profile: what goes to the hosts and what
// comes back (man/dtf-predict.1, "Sharded scoring").
//
// The model is always shipped, in the run's job archive (the entry
// "model"), as `dtf launch` always ships the job; the input files go in it
// too when the profile says with_data = true (as "inputs/<position>-<name>",
// so they sort on the host as they do here), else each must be a readable
// file at the same absolute path on every host, which the preflight checks
// (as `dtf launch` checks a job's records). Each task writes its shard and
// index in its task directory on its host; the launcher fetches them over
// SFTP and removes them there, whatever the outcome.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "cmd/cli_output.h"
#include "lib/base/status.h"
#include "lib/launch/plan.h"

namespace dtf::cli {

// The archive's entry for the model directory.
inline constexpr char kShippedModel[] = "model";

// What the hosts get: the model's files under kShippedModel and, with
// `with_data`, the input files (`files`, sorted as PredictInputFiles
// returns them); otherwise `files` are to be found on the hosts.
StatusOr<launch::BatchFiles> PredictBatchFiles(
    const std::string& model, const std::vector<std::string>& files,
    bool with_data);

// The input files as a task on a host reads them: under the unpacked
// archive (whose model is `shipped_model`) with `with_data`, else `files`.
std::vector<std::string> RemoteInputs(const std::string& shipped_model,
                                      const std::vector<std::string>& files,
                                      bool with_data);

// Where task k of w writes its shard on its host: its task directory.
std::string RemoteShardPath(const launch::TaskPlan& task,
                            const std::string& output, int w);

// For every task of `plan`: with `fetch`, copies its shard output and index
// from its host to ShardOutputPath(output, k, w) and its index here; then,
// whatever happened, removes them (and any temporary file beside them)
// on the host. The first fetch error, naming the task and its host; a host
// where the removal failed gets a warning naming it.
Status FetchRemoteShards(const launch::Plan& plan, const std::string& output,
                         int w, bool fetch, const Console& console);

// After a run that failed to start: FetchRemoteShards without fetching,
// for the tasks of the run in `run_dir` that were started (its plan.json
// and tasks.json; nothing when the run had not got that far).
void RemoveRemoteShardsOfFailedStart(const std::string& run_dir,
                                     const std::string& output, int w,
                                     const Console& console);

}  // namespace dtf::cli
