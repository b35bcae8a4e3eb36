#include "lib/launch/spark/spark_plan.h"

#include <filesystem>
#include <utility>
#include <vector>

#include "lib/base/strings.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/spark/spark_driver.h"
#include "lib/launch/spark/spark_profile.h"
#include "lib/launch/spark/spark_task.h"

namespace dtf::launch::spark {

namespace fs = std::filesystem;

std::string PackDir(const PlanRequest& r) {
  if (!r.batch_files.pack_dir.empty()) return r.batch_files.pack_dir;
  return (fs::path(r.job).parent_path() / ".dtf" / "pack").string();
}

std::string EnvArchivePath(const PlanRequest& r) {
  return StrCat(PackDir(r), "/dtf-env-", r.env_id, ".zip");
}

std::string JobArchivePath(const PlanRequest& r) {
  return StrCat(PackDir(r), "/job-", r.job_id, ".zip");
}

Status SparkProfileTable::Read(const toml_util::Reader& reader,
                               const toml_util::Table& table,
                               Profile* profile) const {
  DTF_RETURN_IF_ERROR(CheckSparkProfileKeys(reader, table));
  DTF_ASSIGN_OR_RETURN(
      MutableSparkTable(profile),
      ReadSparkProfile(reader, table,
                       fs::path(profile->source).parent_path().string()));
  return OkStatus();
}

Status SparkPlanHooks::CheckProfile(const Profile& profile) const {
  if (profile.max_restarts > 0) {
    return FailedPreconditionError(StrCat(
        KeyWhere(profile, "max_restarts"),
        ": max_restarts = ", profile.max_restarts,
        ": Spark runs restart no task (a task that fails fails the barrier "
        "stage, which dtf has Spark not retry); set max_restarts = 0 and "
        "continue a failed run with dtf launch --resume"));
  }
  return OkStatus();
}

std::string SparkPlanHooks::RunsDir(const Profile& profile) const {
  return SparkTableOf(profile).run_dir;
}

StatusOr<Plan> SparkPlanHooks::PlaceTasks(const PlanRequest& r,
                                          Plan plan) const {
  const Profile& profile = r.profile;
  const SparkProfile& sp = SparkTableOf(profile);
  plan.host = "";
  plan.base_port = 0;
  // A batch plan's tasks talk to no one.
  plan.tls = !plan.batch && profile.tls.value_or(true);
  SparkPlanPart& part = plan.part.Mutable<SparkPlanPart>();
  part.profile = sp;
  SparkApp app;
  app.run_id = plan.run_id;
  app.run_dir = plan.run_dir;
  SparkTaskSpec& spec = app.spec;
  spec.binary = plan.binary;
  spec.job = plan.job;
  if (sp.ship) {
    plan.env_id = r.env_id;
    plan.job_id = r.job_id;
    app.archives = {{EnvArchivePath(r), kEnvAlias}};
    spec.binary = StrCat(kEnvAlias, "/bin/dtf");
    // A batch plan's tasks run their commands on the launcher's files.
    if (!plan.batch) {
      app.archives.emplace_back(JobArchivePath(r), kJobAlias);
      const std::string entry = r.job_entry.empty()
                                    ? fs::path(r.job).filename().string()
                                    : r.job_entry;
      spec.job = StrCat(kJobAlias, "/", entry);
    }
  }
  spec.run_dir = plan.run_dir;
  spec.run_id = plan.run_id;
  spec.ps = plan.ps;
  spec.workers = plan.workers;
  spec.threads = plan.threads;
  spec.sets = plan.sets;
  spec.resume = plan.resume;
  spec.tls = plan.tls;
  spec.s3 = !plan.s3_file.empty();
  spec.metrics_out = plan.metrics_out;
  spec.batch = plan.batch;
  app.env.assign(profile.env.begin(), profile.env.end());
  part.archives = app.archives;
  part.submit = SparkSubmitArgv(sp, app);
  part.driver = SparkDriverText(sp, app);
  std::vector<std::string> argv = SparkTaskArgv(spec);
  argv.insert(argv.end(), {"--task-id", "<partition>", "--addresses",
                           "<every task's host:port>"});
  const int count = plan.ps + plan.workers;
  for (int k = 0; k < count; ++k) {
    TaskPlan t;
    t.role = k < plan.ps ? Role::kPs : Role::kWorker;
    t.index = k < plan.ps ? k : k - plan.ps;
    t.chief = t.role == Role::kWorker && t.index == 0;
    t.argv = argv;
    t.argv[t.argv.size() - 3] = std::to_string(k);
    t.env.assign(profile.env.begin(), profile.env.end());
    t.dir = (fs::path(plan.run_dir) / TaskDirName(t.role, t.index)).string();
    t.ready_file = t.dir + "/" + kReadyFile;
    t.stdout_file = t.dir + "/" + kStdoutFile;
    t.stderr_file = t.dir + "/" + kStderrFile;
    t.exit_file = t.dir + "/" + kExitFile;
    // A batch task's own command, which its `dtf task spark --batch` reads
    // from plan.json and runs with its own dtf; its files are the
    // launcher's (shared storage).
    if (plan.batch) {
      t.argv = r.batch_command(t, plan.binary, plan.job);
      AppendBatchS3(plan, plan.run_dir, &t);
    }
    plan.tasks.push_back(std::move(t));
  }
  DTF_RETURN_IF_ERROR(CheckPlanText(plan));
  return plan;
}

}  // namespace dtf::launch::spark
