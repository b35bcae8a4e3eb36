#include "cmd/run_checkpoints.h"

#include <optional>
#include <string>
#include <vector>

#include "lib/base/storage.h"
#include "lib/base/storage_tree.h"
#include "lib/base/strings.h"
#include "lib/launch/plan_hooks.h"
#include "lib/runtime/checkpoint/bundle.h"
#include "lib/runtime/checkpoint/checkpoint_files.h"
#include "lib/runtime/checkpoint/sharded_checkpoint.h"

namespace dtf::cli {
namespace {

// A job whose output_dir is in a bucket: its checkpoints (the top-level
// checkpoint*.dtf objects) copied into `copy`, and the job pointed there.
StatusOr<JobFile> WithLocalCheckpoints(const JobFile& job,
                                       LocalStagingDir* copy) {
  if (!IsRemotePath(job.train.output_dir)) return job;
  DTF_ASSIGN_OR_RETURN(*copy, LocalStagingDir::Create("checkpoints"));
  DTF_ASSIGN_OR_RETURN(
      std::vector<FileInfo> files,
      ListFiles(JoinPath(job.train.output_dir, "checkpoint*.dtf")));
  for (const FileInfo& f : files) {
    const std::string name = f.path.substr(f.path.rfind('/') + 1);
    DTF_RETURN_IF_ERROR(CopyFile(f.path, JoinPath(copy->path(), name)));
  }
  JobFile local = job;
  local.train.output_dir = copy->path();
  return local;
}

StatusOr<runtime::CheckpointInfo> ShardedInfo(const std::string& prefix) {
  DTF_ASSIGN_OR_RETURN(auto reader,
                       runtime::ShardedCheckpointReader::Open(prefix));
  DTF_ASSIGN_OR_RETURN(const runtime::Bundle state, reader->ReadUnsliced());
  return runtime::ReadCheckpointInfo(state);
}

}  // namespace

StatusOr<JobFile> LoadRunJob(const launch::Plan& plan) {
  return LoadJobFile(plan.job, plan.sets);
}

std::vector<launch::CheckpointRow> RunCheckpoints(const JobFile& remote_job,
                                                  const std::string& run_id) {
  const std::string fingerprint = runtime::CheckpointFingerprint(remote_job);
  std::vector<launch::CheckpointRow> rows;
  LocalStagingDir copy;
  StatusOr<JobFile> local = WithLocalCheckpoints(remote_job, &copy);
  if (!local.ok()) {
    rows.push_back(
        {remote_job.train.output_dir, 0, std::string(Message(local.status()))});
    return rows;
  }
  const JobFile& job = *local;
  for (const runtime::CheckpointGeneration& g :
       runtime::ListCheckpointGenerations(job.train.output_dir)) {
    launch::CheckpointRow row;
    row.path = copy.path().empty()
                   ? g.path
                   : JoinPath(remote_job.train.output_dir,
                              g.path.substr(g.path.rfind('/') + 1));
    row.step = g.step;
    StatusOr<runtime::Bundle> bundle = runtime::Bundle::ReadFile(g.path);
    StatusOr<runtime::CheckpointInfo> info =
        bundle.ok() ? runtime::ReadCheckpointInfo(*bundle)
                    : StatusOr<runtime::CheckpointInfo>(bundle.status());
    if (!info.ok()) {
      row.problem = std::string(Message(info.status()));
    } else if (info->run_id != run_id) {
      continue;
    } else if (info->job_fingerprint != fingerprint) {
      row.problem = StrCat("job fingerprint ", info->job_fingerprint,
                           ", the job's is now ", fingerprint);
    }
    rows.push_back(std::move(row));
  }
  // Sharded checkpoints (train.sharded_checkpoints): their index names the
  // generation; the chief's shard says whose it is.
  for (const runtime::ShardedGeneration& g :
       runtime::ListShardedCheckpoints(job.train.output_dir)) {
    launch::CheckpointRow row;
    row.path = g.prefix;
    row.step = g.step;
    StatusOr<runtime::CheckpointInfo> info = ShardedInfo(g.prefix);
    if (!info.ok()) {
      row.problem = std::string(Message(info.status()));
    } else if (info->run_id != run_id) {
      continue;
    } else if (info->job_fingerprint != fingerprint) {
      row.problem = StrCat("job fingerprint ", info->job_fingerprint,
                           ", the job's is now ", fingerprint);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

Status CheckResumable(const launch::RunStatus& status, const launch::Plan& plan,
                      const JobFile& remote_job) {
  const std::string& id = status.run_id;
  if (!status.over()) {
    return FailedPreconditionError(
        StrCat("run ", id, " is ", launch::RunStateName(status.state),
               "; only a failed or stopped run can be resumed (dtf stop ", id,
               " ends it)"));
  }
  if (status.state == launch::RunState::kSucceeded) {
    return FailedPreconditionError(
        StrCat("run ", id,
               " finished (succeeded); there is nothing to "
               "resume"));
  }
  // An SSH run's local checkpoints are on its chief's host: its tasks
  // check them. Those in a bucket are checked from here.
  if (plan.hooks().FilesOnHosts() &&
      !IsRemotePath(remote_job.train.output_dir)) {
    return OkStatus();
  }
  LocalStagingDir copy;
  DTF_ASSIGN_OR_RETURN(const JobFile job,
                       WithLocalCheckpoints(remote_job, &copy));
  std::string why;
  DTF_ASSIGN_OR_RETURN(
      std::optional<runtime::Bundle> own,
      runtime::FindRunCheckpoint(job.train.output_dir, id,
                                 runtime::CheckpointFingerprint(job), &why));
  if (!own) {
    return FailedPreconditionError(StrCat("run ", id,
                                          " has no checkpoint to resume from (",
                                          why, "); start a new run"));
  }
  return OkStatus();
}

}  // namespace dtf::cli
