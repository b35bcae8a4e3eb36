#include "lib/launch/slurm/slurm_plan.h"

#include <filesystem>
#include <utility>
#include <vector>

#include "lib/base/strings.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/slurm/batch_script.h"
#include "lib/launch/slurm/slurm_profile.h"
#include "lib/launch/slurm/slurm_task.h"

namespace dtf::launch::slurm {

namespace fs = std::filesystem;

Status SlurmProfileTable::Read(const toml_util::Reader& reader,
                               const toml_util::Table& table,
                               Profile* profile) const {
  DTF_RETURN_IF_ERROR(CheckSlurmProfileKeys(reader, table));
  DTF_ASSIGN_OR_RETURN(
      MutableSlurmTable(profile),
      ReadSlurmProfile(reader, table,
                       fs::path(profile->source).parent_path().string()));
  return OkStatus();
}

Status SlurmPlanHooks::CheckProfile(const Profile&) const {
  // max_restarts is honoured (PlaceTasks refuses it for allreduce).
  return OkStatus();
}

std::string SlurmPlanHooks::RunsDir(const Profile& profile) const {
  return SlurmTableOf(profile).run_dir;
}

StatusOr<Plan> SlurmPlanHooks::PlaceTasks(const PlanRequest& r,
                                          Plan plan) const {
  const Profile& profile = r.profile;
  if (plan.max_restarts > 0 && plan.allreduce()) {
    // Restarting every rank would end the job step the batch script's
    // srun holds, and with it the job.
    return FailedPreconditionError(StrCat(
        KeyWhere(profile, "max_restarts"),
        ": max_restarts = ", profile.max_restarts,
        ": an allreduce run under Slurm restarts no rank (every rank would "
        "have to start again, and the job ends with its job step); set "
        "max_restarts = 0 and continue a failed run with dtf launch "
        "--resume"));
  }
  plan.host = "";
  plan.base_port = SlurmTableOf(profile).base_port;
  // On unless the profile turns it off: the tasks talk across the
  // allocation's nodes. Their certificates name their tasks, not hosts
  // (rpc::TlsMaterial::by_task_name). A batch plan's tasks talk to no one.
  plan.tls = !plan.batch && profile.tls.value_or(true);
  SlurmPlanPart& part = plan.part.Mutable<SlurmPlanPart>();
  part.profile = SlurmTableOf(profile);
  SlurmRunSpec spec;
  spec.binary = plan.binary;
  spec.job = plan.job;
  spec.run_dir = plan.run_dir;
  spec.run_id = plan.run_id;
  spec.ps = plan.ps;
  spec.workers = plan.workers;
  spec.threads = plan.threads;
  spec.base_port = SlurmTableOf(profile).base_port;
  spec.gpus_per_node = SlurmTableOf(profile).gpus_per_node;
  spec.sets = plan.sets;
  spec.resume = plan.resume;
  spec.metrics_out = plan.metrics_out;
  spec.tls = plan.tls;
  spec.s3 = !plan.s3_file.empty();
  spec.batch = plan.batch;
  spec.restarts = plan.max_restarts > 0;
  spec.started_workers = plan.launch_workers;
  spec.env.assign(profile.env.begin(), profile.env.end());
  DTF_ASSIGN_OR_RETURN(part.batch_script,
                       RenderBatchScript(SlurmTableOf(profile), spec));
  const std::vector<std::string> argv = SlurmTaskArgv(spec);
  const int count = plan.ps + plan.workers;
  for (int k = 0; k < count; ++k) {
    TaskPlan t;
    t.role = k < plan.ps ? Role::kPs : Role::kWorker;
    t.index = k < plan.ps ? k : k - plan.ps;
    t.chief = t.role == Role::kWorker && t.index == 0;
    t.argv = argv;
    t.env.assign(profile.env.begin(), profile.env.end());
    t.dir = (fs::path(plan.run_dir) / TaskDirName(t.role, t.index)).string();
    t.ready_file = t.dir + "/" + kReadyFile;
    t.stdout_file = t.dir + "/" + kStdoutFile;
    t.stderr_file = t.dir + "/" + kStderrFile;
    t.exit_file = t.dir + "/" + kExitFile;
    // A batch task's own command, which its `dtf task slurm --batch` reads
    // from plan.json and runs; its paths are the launcher's (shared
    // storage).
    if (plan.batch) {
      t.argv = r.batch_command(t, plan.binary, plan.job);
      AppendBatchS3(plan, plan.run_dir, &t);
    }
    plan.tasks.push_back(std::move(t));
  }
  DTF_RETURN_IF_ERROR(CheckPlanText(plan));
  return plan;
}

}  // namespace dtf::launch::slurm
