#include "lib/launch/plan_hooks.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "lib/base/strings.h"
#include "lib/launch/run_layout.h"

namespace dtf::launch {
namespace {

namespace fs = std::filesystem;

std::string JoinAddresses(const std::vector<TaskPlan>& tasks, Role role) {
  std::string out;
  for (const TaskPlan& t : tasks) {
    if (t.role != role) continue;
    StrAppend(&out, out.empty() ? "" : ",", t.address());
  }
  return out;
}

std::vector<std::string> ServeArgv(const Plan& plan, const TaskPlan& task,
                                   const TaskPaths& paths) {
  std::vector<std::string> argv = {
      paths.binary,    "serve",
      "--job",         paths.job,
      "--role",        std::string(RoleName(task.role)),
      "--index",       std::to_string(task.index),
      "--ps",          JoinAddresses(plan.tasks, Role::kPs),
      "--workers",     JoinAddresses(plan.tasks, Role::kWorker),
      "--run-id",      plan.run_id,
      "--run-dir",     paths.run_dir,
      "--secret-file", paths.secret_file,
      "--ready-file",  task.ready_file,
      "--threads",     std::to_string(plan.threads)};
  for (const std::string& set : plan.sets) {
    argv.push_back("--set");
    argv.push_back(set);
  }
  if (plan.resume) argv.push_back("--restore");
  if (plan.launch_workers > 0) {
    argv.push_back("--started-workers");
    argv.push_back(std::to_string(plan.launch_workers));
  }
  if (!paths.device_set.empty()) {
    argv.push_back("--set");
    argv.push_back(paths.device_set);
  }
  if (task.chief && !paths.metrics_out.empty()) {
    argv.push_back("--metrics-out");
    argv.push_back(paths.metrics_out);
  }
  if (plan.tls) {
    argv.push_back("--tls-dir");
    argv.push_back(StrCat(paths.run_dir, "/", kTlsDir));
  }
  if (!plan.s3_file.empty()) {
    argv.push_back("--s3-credentials");
    argv.push_back(StrCat(paths.run_dir, "/", kS3CredentialsFile));
  }
  return argv;
}

// Gives each worker its device (see MakePlan in plan.h): the GPU goes into
// its environment, the device into paths[k].device_set.
Status AssignDevices(const PlanRequest& r, const Profile& profile,
                     const std::vector<const HostEntry*>& placed, Plan* plan,
                     std::vector<TaskPaths>* paths) {
  const DeviceName device = profile.device.value_or(r.job_device);
  plan->cuda_workers = device.cuda;
  const auto where = [&](const char* key) { return KeyWhere(profile, key); };
  std::map<std::string, int> next_gpu;  // per host
  for (size_t k = size_t(plan->ps); k < plan->tasks.size(); ++k) {
    TaskPlan& t = plan->tasks[k];
    if (!device.cuda) {
      if (r.job_device.cuda) (*paths)[k].device_set = "train.device=cpu";
      continue;
    }
    const HostEntry* host = placed.empty() ? nullptr : placed[k];
    const int gpus = host != nullptr ? host->gpus : profile.gpus;
    if (host != nullptr && gpus == 0) {
      return InvalidArgumentError(StrCat(
          where(plan->hostfile.empty() ? "hosts" : "hostfile"), ": host ",
          host->host, " has no gpus= but the plan puts CUDA task ", t.name(),
          " there (add gpus=N to its line, or set device = \"cpu\")"));
    }
    int gpu = device.ordinal;
    if (gpu < 0) {
      gpu = next_gpu[t.host]++;
      if (gpus > 0 && gpu >= gpus) {
        if (r.allreduce) {
          return InvalidArgumentError(
              StrCat(where(host != nullptr ? "hostfile" : "gpus"),
                     ": allreduce needs "
                     "a GPU per worker, and ",
                     t.host, " has ", gpus,
                     " for more "
                     "workers (raise gpus or lower --workers)"));
        }
        gpu %= gpus;
      }
    } else if (gpus > 0 && gpu >= gpus) {
      return InvalidArgumentError(
          StrCat(where("device"), ": device: cuda:", gpu, " but ", t.host,
                 " has ", gpus, " GPU", gpus == 1 ? "" : "s"));
    }
    t.env.emplace_back("CUDA_VISIBLE_DEVICES", std::to_string(gpu));
    std::sort(t.env.begin(), t.env.end());
    (*paths)[k].device_set = "train.device=cuda";
  }
  return OkStatus();
}
}  // namespace

namespace {

// The profile's `key` (min_workers or max_workers, `value`; 0: off)
// against the run: in allreduce mode only where `hooks` resize allreduce
// runs, and at most (min_workers) or at least (max_workers) the run's
// workers.
Status CheckWorkerBound(const PlanRequest& r, const PlanHooks& hooks,
                        const char* key, int value) {
  if (value == 0) return OkStatus();
  const Profile& profile = r.profile;
  const int workers =
      r.overrides.workers > 0 ? r.overrides.workers : profile.workers;
  const std::string where = StrCat(KeyWhere(profile, key), ": ", key, " = ");
  if (r.allreduce && !hooks.ResizesAllreduce()) {
    return FailedPreconditionError(
        StrCat(where, value, ": ", r.job,
               " trains in allreduce mode, whose workers restart together at "
               "another size where dtf launch stops and starts them itself "
               "(backend = \"local\" or \"ssh\"); this profile's backend is ",
               BackendName(profile.backend)));
  }
  const bool min = std::string_view(key) == "min_workers";
  if (min ? value > workers : value < workers) {
    return InvalidArgumentError(StrCat(
        where, value, min ? " is more than" : " is less than", " the run's ",
        workers, " workers", r.overrides.workers > 0 ? " (--workers)" : ""));
  }
  return OkStatus();
}

}  // namespace

// The profile's min_workers against the run.
Status CheckMinWorkers(const PlanRequest& r, const PlanHooks& hooks) {
  return CheckWorkerBound(r, hooks, "min_workers", r.profile.min_workers);
}

Status CheckMaxWorkers(const PlanRequest& r, const PlanHooks& hooks) {
  return CheckWorkerBound(r, hooks, "max_workers", r.profile.max_workers);
}

// What MakePlan refuses whatever the backend: relative paths, bad
// overrides and --set values, and restarts without periodic checkpoints.
Status CheckRequest(const PlanRequest& r, const PlanHooks& hooks) {
  const Profile& profile = r.profile;
  const Overrides& o = r.overrides;
  if (o.ps < 0 || o.workers < 0) {
    return InvalidArgumentError("--ps and --workers must be at least 1");
  }
  for (const std::string& set : o.sets) DTF_RETURN_IF_ERROR(ValidateSet(set));
  // An s3:// URL names the same object from every host.
  if (!o.metrics_out.empty() && !o.metrics_out.starts_with("s3://") &&
      !fs::path(o.metrics_out).is_absolute()) {
    return InvalidArgumentError(StrCat("--metrics-out ", o.metrics_out,
                                       ": the plan needs an absolute path"));
  }
  const bool batch = r.batch_command != nullptr;
  if (!batch) {
    DTF_RETURN_IF_ERROR(CheckMinWorkers(r, hooks));
    DTF_RETURN_IF_ERROR(CheckMaxWorkers(r, hooks));
  }
  if (!batch && !r.allreduce && profile.max_restarts > 0 &&
      r.job_checkpoint_every_steps <= 0) {
    return FailedPreconditionError(StrCat(
        KeyWhere(profile, "max_restarts"),
        ": max_restarts = ", profile.max_restarts,
        ": a failed task is restarted from the run's last checkpoint, but ",
        r.job,
        " has train.checkpoint_every_steps = 0 (checkpoints only at the "
        "end): a restarted parameter server would lose every update of the "
        "run; set train.checkpoint_every_steps (or --set "
        "train.checkpoint_every_steps=N), or max_restarts = 0"));
  }
  return OkStatus();
}

// The plan without its tasks: ids, paths, counts and the profile's
// options, as every backend has them.
Plan PlanWithoutTasks(const PlanRequest& r, const PlanHooks& hooks) {
  const Profile& profile = r.profile;
  const Overrides& o = r.overrides;
  const bool batch = r.batch_command != nullptr;
  Plan plan;
  plan.run_id = r.run_id;
  plan.resume = r.resume;
  plan.batch = batch;
  plan.job = fs::path(r.job).lexically_normal().string();
  plan.binary = r.binary;
  std::string runs_dir = r.runs_dir;
  if (runs_dir.empty()) runs_dir = hooks.RunsDir(profile);
  runs_dir = runs_dir.empty() ? DefaultRunsDir(fs::path(plan.job).parent_path())
                              : fs::path(runs_dir).lexically_normal().string();
  plan.run_dir = (fs::path(runs_dir) / r.run_id).string();
  plan.secret_file = (fs::path(plan.run_dir) / kSecretFile).string();
  if (!r.s3_credentials.empty()) {
    plan.s3_file = (fs::path(plan.run_dir) / kS3CredentialsFile).string();
    plan.s3_variables = r.s3_variables;
  }
  plan.profile_name = profile.name;
  plan.profile_source = profile.source;
  plan.backend = profile.backend;
  // Allreduce averages gradients between the workers: no parameter servers.
  // A batch plan has workers only.
  plan.ps = r.allreduce || batch ? 0 : o.ps > 0 ? o.ps : profile.ps;
  plan.workers = o.workers > 0 ? o.workers : profile.workers;
  if (!batch && profile.max_workers > plan.workers) {
    plan.launch_workers = plan.workers;
    plan.workers = profile.max_workers;
  }
  plan.host = profile.host;
  plan.base_port = profile.base_port;
  plan.threads = profile.threads;
  plan.max_restarts = batch ? 0 : profile.max_restarts;
  plan.min_workers = batch ? 0 : profile.min_workers;
  plan.sets = o.sets;
  plan.metrics_out = o.metrics_out;
  return plan;
}

// Task `k` (plan order) of `plan` on plan.host with the profile's
// environment; its files, port, command line and devices are set later.
TaskPlan TaskAt(const Plan& plan, const Profile& profile, int k) {
  TaskPlan t;
  t.role = k < plan.ps ? Role::kPs : Role::kWorker;
  t.index = k < plan.ps ? k : k - plan.ps;
  t.chief = t.role == Role::kWorker && t.index == 0;
  t.host = plan.host;
  t.env.assign(profile.env.begin(), profile.env.end());
  return t;
}

// Task `t`'s directory under `run_dir` and the files in it.
void SetTaskFiles(const std::string& run_dir, TaskPlan* t) {
  t->dir = (fs::path(run_dir) / TaskDirName(t->role, t->index)).string();
  t->ready_file = t->dir + "/" + kReadyFile;
  t->stdout_file = t->dir + "/" + kStdoutFile;
  t->stderr_file = t->dir + "/" + kStderrFile;
  t->exit_file = t->dir + "/" + kExitFile;
}

// The paths of a task on this machine: the launcher's own.
TaskPaths LauncherPaths(const Plan& plan) {
  return {plan.binary,      plan.job,         plan.run_dir,
          plan.secret_file, plan.metrics_out, ""};
}

// The port range and the ports the request gives, against the task count.
Status CheckPorts(const PlanRequest& r, const Plan& plan, int count) {
  const Profile& profile = r.profile;
  if (plan.base_port > 0 && plan.base_port + count - 1 > 65535) {
    auto where = profile.where.find("base_port");
    return InvalidArgumentError(
        StrCat(where == profile.where.end() ? profile.source : where->second,
               ": base_port: ", plan.base_port, " + ", count,
               " tasks runs past port 65535"));
  }
  if (!r.ports.empty() && r.ports.size() != static_cast<size_t>(count)) {
    return InternalError(
        StrCat("plan: ", r.ports.size(), " ports for ", count, " tasks"));
  }
  return OkStatus();
}

Status PlanHooks::CheckProfile(const Profile&) const { return OkStatus(); }

std::string PlanHooks::RunsDir(const Profile&) const { return ""; }

void PlanHooks::TakeProfile(const PlanRequest&, Plan*) const {}

StatusOr<std::vector<const HostEntry*>> PlanHooks::PlaceOnHosts(
    const Plan&, const Profile&) const {
  return std::vector<const HostEntry*>();
}

TaskPaths PlanHooks::OnHost(const Plan& plan, const std::string&,
                            const HostEntry& host, TaskPlan* task) const {
  task->host = host.host;
  return LauncherPaths(plan);
}

StatusOr<Plan> PlanHooks::PlaceTasks(const PlanRequest& r, Plan plan) const {
  const Profile& profile = r.profile;
  TakeProfile(r, &plan);
  const int count = plan.ps + plan.workers;
  DTF_RETURN_IF_ERROR(CheckPorts(r, plan, count));
  DTF_ASSIGN_OR_RETURN(const std::vector<const HostEntry*> placed,
                       PlaceOnHosts(plan, profile));
  const std::string job_entry = r.job_entry.empty()
                                    ? fs::path(plan.job).filename().string()
                                    : r.job_entry;
  std::vector<TaskPaths> paths;
  for (int k = 0; k < count; ++k) {
    TaskPlan t = TaskAt(plan, profile, k);
    TaskPaths p = LauncherPaths(plan);
    if (!placed.empty()) {
      p = OnHost(plan, job_entry, *placed[static_cast<size_t>(k)], &t);
    }
    SetTaskFiles(p.run_dir, &t);
    paths.push_back(std::move(p));
    t.port = !r.ports.empty()     ? r.ports[static_cast<size_t>(k)]
             : plan.base_port > 0 ? plan.base_port + k
                                  : 0;
    plan.tasks.push_back(std::move(t));
  }
  DTF_RETURN_IF_ERROR(AssignDevices(r, profile, placed, &plan, &paths));
  plan.tls = profile.tls.value_or(plan.LeavesLoopback());
  for (size_t k = 0; k < plan.tasks.size(); ++k) {
    plan.tasks[k].argv =
        plan.batch
            ? r.batch_command(plan.tasks[k], paths[k].binary, paths[k].job)
            : ServeArgv(plan, plan.tasks[k], paths[k]);
    if (plan.batch) AppendBatchS3(plan, paths[k].run_dir, &plan.tasks[k]);
  }
  DTF_RETURN_IF_ERROR(CheckPlanText(plan));
  return plan;
}

void AppendBatchS3(const Plan& plan, const std::string& run_dir,
                   TaskPlan* task) {
  if (plan.s3_file.empty()) return;
  task->argv.push_back("--s3-credentials");
  task->argv.push_back(StrCat(run_dir, "/", kS3CredentialsFile));
}

StatusOr<Plan> MakePlanWith(const PlanRequest& r, const PlanHooks& hooks) {
  if (!fs::path(r.job).is_absolute()) {
    return InvalidArgumentError(
        StrCat("job file ", r.job, ": the plan needs an absolute path"));
  }
  if (!fs::path(r.binary).is_absolute()) {
    return InvalidArgumentError(
        StrCat("task binary ", r.binary, ": the plan needs an absolute path"));
  }
  DTF_RETURN_IF_ERROR(hooks.CheckProfile(r.profile));
  DTF_RETURN_IF_ERROR(CheckRequest(r, hooks));
  return hooks.PlaceTasks(r, PlanWithoutTasks(r, hooks));
}

const PlanHooks& Plan::hooks() const { return PlanHooksOf(backend); }

bool PlanHooks::HandsOff() const { return false; }

bool PlanHooks::TasksHere() const { return true; }

bool PlanHooks::ResizesAllreduce() const { return true; }

bool PlanHooks::FilesOnHosts() const { return false; }

std::string PlanHooks::TlsNameOf(const Plan&, const TaskPlan& task) const {
  return task.host;
}

bool PlanHooks::CrossesNetwork(const Plan& plan) const {
  return plan.LeavesLoopback();
}

std::string PlanHooks::TaskLabel(const TaskPlan& task) const {
  return task.name();
}

std::string PlaintextWarning(const Plan& plan, const Profile& profile) {
  if (plan.tls || plan.batch || !plan.hooks().CrossesNetwork(plan)) {
    return "";
  }
  return TlsOffWarning(profile);
}

std::string PortRangeText(const Plan& plan) {
  if (plan.base_port == 0) return "ports chosen at launch";
  return StrCat("ports ", plan.base_port, "-",
                plan.base_port + plan.ps + plan.workers - 1);
}

std::string PlanHooks::PlacementText(const Plan& plan) const {
  return StrCat(plan.host, ", ", PortRangeText(plan));
}

std::string PlanHooks::SecretNote(const Plan&) const { return ""; }

std::string PlanHooks::TlsNote(const Plan&) const { return ""; }

std::string PlanHooks::TlsOffText(const Plan& plan) const {
  return StrCat("off", plan.LeavesLoopback()
                           ? " (tls = false): the run's secret and every "
                             "tensor cross the network in plaintext"
                           : " (every task on loopback)");
}

std::string PlanHooks::MoreText(const Plan&) const { return ""; }

std::string PlanHooks::AddressText(const TaskPlan& task) const {
  return task.address();
}

std::string PlanHooks::LogsText(const TaskPlan& task) const { return task.dir; }

std::string PlanHooks::TableNote(const Plan& plan) const {
  return plan.base_port == 0 ? "(port 0: a free port chosen at launch)\n" : "";
}

std::string PlanHooks::CommandsText(const Plan& plan) const {
  return TaskCommandsText(plan);
}

void PlanHooks::WriteJson(const Plan&, nlohmann::ordered_json*) const {}

void PlanHooks::ReadJson(const nlohmann::ordered_json&, Plan*) const {}

void PlanHooks::WriteTaskJson(const TaskPlan&, nlohmann::ordered_json*) const {}

void PlanHooks::ReadTaskJson(const nlohmann::ordered_json&, TaskPlan*) const {}

bool PlanHooks::AddressesPlanned() const { return true; }

}  // namespace dtf::launch
