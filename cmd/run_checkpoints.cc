#include "cmd/run_checkpoints.h"

#include <optional>

#include "lib/base/strings.h"
#include "lib/launch/plan_hooks.h"
#include "lib/runtime/checkpoint/bundle.h"
#include "lib/runtime/checkpoint/checkpoint_files.h"

namespace dtf::cli {

StatusOr<JobFile> LoadRunJob(const launch::Plan& plan) {
  return LoadJobFile(plan.job, plan.sets);
}

std::vector<launch::CheckpointRow> RunCheckpoints(const JobFile& job,
                                                  const std::string& run_id) {
  const std::string fingerprint = runtime::CheckpointFingerprint(job);
  std::vector<launch::CheckpointRow> rows;
  for (const runtime::CheckpointGeneration& g :
       runtime::ListCheckpointGenerations(job.train.output_dir)) {
    launch::CheckpointRow row;
    row.path = g.path;
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
  return rows;
}

Status CheckResumable(const launch::RunStatus& status, const launch::Plan& plan,
                      const JobFile& job) {
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
  // An SSH run's checkpoints are on its chief's host: its tasks check them.
  if (plan.hooks().FilesOnHosts()) return OkStatus();
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
