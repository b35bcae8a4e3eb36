#include "lib/launch/plan.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "lib/base/strings.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/slurm/batch_script.h"
#include "lib/launch/slurm/slurm_task.h"
#include "lib/rpc/tls_certs.h"

namespace dtf::launch {
namespace {

namespace fs = std::filesystem;

bool IsKeyChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' || c == '-';
}

std::string JoinAddresses(const std::vector<TaskPlan>& tasks, Role role) {
  std::string out;
  for (const TaskPlan& t : tasks) {
    if (t.role != role) continue;
    StrAppend(&out, out.empty() ? "" : ",", t.address());
  }
  return out;
}

// Where a task's files are: on this machine, or on its host for SSH.
struct TaskPaths {
  std::string binary;
  std::string job;
  std::string run_dir;
  std::string secret_file;
  std::string metrics_out;
  // "train.device=..." for a worker whose device the plan sets.
  std::string device_set;
};

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
  return argv;
}

// The host of each task (plan order) for an SSH profile.
// "<file>:<line>:<col>" of a profile key, or the profile's file when the
// key was not written (a default).
std::string WhereOf(const Profile& profile, const char* key) {
  auto it = profile.where.find(key);
  return it == profile.where.end() ? profile.source : it->second;
}

StatusOr<std::vector<const HostEntry*>> PlaceTasks(const Plan& plan,
                                                   const Profile& profile) {
  const auto where = [&](const char* key) { return WhereOf(profile, key); };
  const std::string hosts_key = plan.hostfile.empty() ? "hosts" : "hostfile";
  std::vector<const HostEntry*> out;
  std::vector<const HostEntry*> ps_hosts;
  int slots = 0;
  for (const HostEntry& h : plan.hosts) {
    if (h.ps) ps_hosts.push_back(&h);
    slots += h.slots;
  }
  if (ps_hosts.empty() && plan.ps > 0) {
    return InvalidArgumentError(
        StrCat(where(hosts_key.c_str()), ": ", hosts_key,
               ": every host has ps=false; at least one must run parameter "
               "servers"));
  }
  if (plan.workers > slots) {
    return InvalidArgumentError(
        StrCat(where(hosts_key.c_str()), ": ", hosts_key, ": ", plan.workers,
               " workers but the hosts have ", slots, " slot",
               slots == 1 ? "" : "s", " (raise slots=N or lower --workers)"));
  }
  for (int k = 0; k < plan.ps; ++k) {
    out.push_back(ps_hosts[static_cast<size_t>(k) % ps_hosts.size()]);
  }
  std::vector<int> used(plan.hosts.size(), 0);
  size_t next = 0;
  for (int k = 0; k < plan.workers; ++k) {
    while (used[next] >= plan.hosts[next].slots) {
      next = (next + 1) % plan.hosts.size();
    }
    ++used[next];
    out.push_back(&plan.hosts[next]);
    next = (next + 1) % plan.hosts.size();
  }
  return out;
}

// Gives each worker its device (see MakePlan in plan.h): the GPU goes into
// its environment, the device into paths[k].device_set.
Status AssignDevices(const PlanRequest& r, const Profile& profile,
                     const std::vector<const HostEntry*>& placed, Plan* plan,
                     std::vector<TaskPaths>* paths) {
  const DeviceName device = profile.device.value_or(r.job_device);
  plan->cuda_workers = device.cuda;
  const auto where = [&](const char* key) { return WhereOf(profile, key); };
  std::map<std::string, int> next_gpu;  // per host
  for (size_t k = size_t(plan->ps); k < plan->tasks.size(); ++k) {
    TaskPlan& t = plan->tasks[k];
    if (!device.cuda) {
      if (r.job_device.cuda) (*paths)[k].device_set = "train.device=cpu";
      continue;
    }
    const HostEntry* host = plan->remote() ? placed[k] : nullptr;
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

const TaskPlan* Plan::Find(std::string_view name) const {
  for (const TaskPlan& t : tasks) {
    if (t.name() == name) return &t;
  }
  return nullptr;
}

bool Plan::LeavesLoopback() const {
  for (const TaskPlan& t : tasks) {
    if (!rpc::IsLoopbackHost(t.host)) return true;
  }
  return false;
}

std::string PlaintextWarning(const Plan& plan, const Profile& profile) {
  // A Slurm run's tasks are on the allocation's nodes, off loopback.
  if (plan.tls || plan.batch || (!plan.on_slurm() && !plan.LeavesLoopback())) {
    return "";
  }
  return TlsOffWarning(profile);
}

std::string TlsOffWarning(const Profile& profile) {
  return StrCat(WhereOf(profile, "tls"),
                ": tls = false: the run's secret and every tensor cross the "
                "network in plaintext");
}

Status ValidateSet(std::string_view set) {
  const size_t eq = set.find('=');
  const std::string_view key = set.substr(0, eq);
  const auto bad = [&](std::string_view why) {
    return InvalidArgumentError(StrCat("--set ", ShellQuote(set), ": ", why,
                                       " (expected section.key=value)"));
  };
  if (eq == std::string_view::npos) return bad("no '='");
  if (eq + 1 == set.size()) return bad("empty value");
  if (key.find('.') == std::string_view::npos) return bad("no section");
  size_t part = 0;
  for (size_t i = 0; i <= key.size(); ++i) {
    if (i == key.size() || key[i] == '.') {
      if (i == part) return bad("empty key part");
      part = i + 1;
    } else if (!IsKeyChar(key[i])) {
      return bad(StrCat("'", std::string(1, key[i]),
                        "' in the key (letters, digits, _ and - only)"));
    }
  }
  return OkStatus();
}

namespace {

Status CheckSlurmPlanKeys(const Profile& profile) {
  if (profile.max_restarts > 0) {
    return FailedPreconditionError(StrCat(
        WhereOf(profile, "max_restarts"),
        ": max_restarts = ", profile.max_restarts,
        ": Slurm runs restart no task (srun --kill-on-bad-exit ends the job "
        "step when one fails); set max_restarts = 0 and continue a failed run "
        "with dtf launch --resume"));
  }
  return OkStatus();
}

// The rest of MakePlan for backend = "slurm": tasks placed by Slurm, every
// one running the batch script's srun command.
StatusOr<Plan> MakeSlurmPlan(const PlanRequest& r, Plan plan) {
  const Profile& profile = r.profile;
  plan.host = "";
  plan.base_port = profile.slurm.base_port;
  // On unless the profile turns it off: the tasks talk across the
  // allocation's nodes. Their certificates name their tasks, not hosts
  // (rpc::TlsMaterial::by_task_name). A batch plan's tasks talk to no one.
  plan.tls = !plan.batch && profile.tls.value_or(true);
  plan.slurm = profile.slurm;
  slurm::SlurmRunSpec spec;
  spec.binary = plan.binary;
  spec.job = plan.job;
  spec.run_dir = plan.run_dir;
  spec.run_id = plan.run_id;
  spec.ps = plan.ps;
  spec.workers = plan.workers;
  spec.threads = plan.threads;
  spec.base_port = profile.slurm.base_port;
  spec.gpus_per_node = profile.slurm.gpus_per_node;
  spec.sets = plan.sets;
  spec.resume = plan.resume;
  spec.metrics_out = plan.metrics_out;
  spec.tls = plan.tls;
  spec.batch = plan.batch;
  spec.env.assign(profile.env.begin(), profile.env.end());
  DTF_ASSIGN_OR_RETURN(plan.batch_script,
                       slurm::RenderBatchScript(profile.slurm, spec));
  const std::vector<std::string> argv = slurm::SlurmTaskArgv(spec);
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
    if (plan.batch) t.argv = r.batch_command(t, plan.binary, plan.job);
    plan.tasks.push_back(std::move(t));
  }
  DTF_RETURN_IF_ERROR(CheckPlanText(plan));
  return plan;
}

}  // namespace

StatusOr<Plan> MakePlan(const PlanRequest& r) {
  const Profile& profile = r.profile;
  if (!fs::path(r.job).is_absolute()) {
    return InvalidArgumentError(
        StrCat("job file ", r.job, ": the plan needs an absolute path"));
  }
  if (!fs::path(r.binary).is_absolute()) {
    return InvalidArgumentError(
        StrCat("task binary ", r.binary, ": the plan needs an absolute path"));
  }
  if (profile.backend == BackendKind::kSlurm) {
    DTF_RETURN_IF_ERROR(CheckSlurmPlanKeys(profile));
  }
  if (profile.backend == BackendKind::kKubernetes) {
    return FailedPreconditionError(StrCat(
        WhereOf(profile, "backend"),
        ": backend = \"kubernetes\": the run is a set of manifests, not a "
        "plan of processes; dtf launch --dry-run prints them, --render DIR "
        "writes them"));
  }
  const Overrides& o = r.overrides;
  if (o.ps < 0 || o.workers < 0) {
    return InvalidArgumentError("--ps and --workers must be at least 1");
  }
  for (const std::string& set : o.sets) DTF_RETURN_IF_ERROR(ValidateSet(set));
  if (!o.metrics_out.empty() && !fs::path(o.metrics_out).is_absolute()) {
    return InvalidArgumentError(StrCat("--metrics-out ", o.metrics_out,
                                       ": the plan needs an absolute path"));
  }
  // Allreduce runs restart no task (a worker alone cannot rejoin the
  // others' collectives), so the rule is for parameter-server runs only.
  const bool batch = r.batch_command != nullptr;
  if (!batch && !r.allreduce && profile.max_restarts > 0 &&
      r.job_checkpoint_every_steps <= 0) {
    return FailedPreconditionError(StrCat(
        WhereOf(profile, "max_restarts"),
        ": max_restarts = ", profile.max_restarts,
        ": a failed task is restarted from the run's last checkpoint, but ",
        r.job,
        " has train.checkpoint_every_steps = 0 (checkpoints only at the "
        "end): a restarted parameter server would lose every update of the "
        "run; set train.checkpoint_every_steps (or --set "
        "train.checkpoint_every_steps=N), or max_restarts = 0"));
  }
  Plan plan;
  plan.run_id = r.run_id;
  plan.resume = r.resume;
  plan.batch = batch;
  plan.job = fs::path(r.job).lexically_normal().string();
  plan.binary = r.binary;
  std::string runs_dir = r.runs_dir;
  if (runs_dir.empty() && profile.backend == BackendKind::kSlurm) {
    runs_dir = profile.slurm.run_dir;
  }
  runs_dir = runs_dir.empty() ? DefaultRunsDir(fs::path(plan.job).parent_path())
                              : fs::path(runs_dir).lexically_normal().string();
  plan.run_dir = (fs::path(runs_dir) / r.run_id).string();
  plan.secret_file = (fs::path(plan.run_dir) / kSecretFile).string();
  plan.profile_name = profile.name;
  plan.profile_source = profile.source;
  plan.backend = profile.backend;
  // Allreduce averages gradients between the workers: no parameter servers.
  // A batch plan has workers only.
  plan.ps = r.allreduce || batch ? 0 : o.ps > 0 ? o.ps : profile.ps;
  plan.workers = o.workers > 0 ? o.workers : profile.workers;
  plan.host = profile.host;
  plan.base_port = profile.base_port;
  plan.threads = profile.threads;
  plan.max_restarts = batch ? 0 : profile.max_restarts;
  plan.sets = o.sets;
  plan.metrics_out = o.metrics_out;
  if (plan.on_slurm()) return MakeSlurmPlan(r, std::move(plan));
  if (plan.remote()) {
    plan.host = "";
    plan.hosts = profile.hosts;
    plan.hostfile = profile.hostfile;
    plan.work_dir = profile.work_dir;
    plan.with_data = profile.with_data;
    plan.ssh = profile.ssh;
    plan.env_id = r.env_id;
    plan.job_id = r.job_id;
  }

  const int count = plan.ps + plan.workers;
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
  std::vector<const HostEntry*> placed;
  if (plan.remote()) {
    DTF_ASSIGN_OR_RETURN(placed, PlaceTasks(plan, profile));
  }
  const std::string job_entry = r.job_entry.empty()
                                    ? fs::path(plan.job).filename().string()
                                    : r.job_entry;
  std::vector<TaskPaths> paths;
  for (int k = 0; k < count; ++k) {
    TaskPlan t;
    t.role = k < plan.ps ? Role::kPs : Role::kWorker;
    t.index = k < plan.ps ? k : k - plan.ps;
    t.chief = t.role == Role::kWorker && t.index == 0;
    t.host = plan.host;
    std::string run_dir = plan.run_dir;
    TaskPaths p{plan.binary,      plan.job,         plan.run_dir,
                plan.secret_file, plan.metrics_out, ""};
    if (plan.remote()) {
      const HostEntry& h = *placed[static_cast<size_t>(k)];
      t.host = h.host;
      t.work_dir = ExpandWorkDir(plan.work_dir, h.host);
      t.ssh_user = h.user.value_or(plan.ssh.user);
      t.ssh_port = h.port.value_or(plan.ssh.port);
      run_dir = StrCat(t.work_dir, "/runs/", plan.run_id);
      p.binary = StrCat(t.work_dir, "/envs/", plan.env_id, "/bin/dtf");
      p.job = StrCat(t.work_dir, "/jobs/", plan.job_id, "/", job_entry);
      p.run_dir = run_dir;
      p.secret_file = StrCat(run_dir, "/", kSecretFile);
      p.metrics_out = plan.metrics_out.empty()
                          ? ""
                          : StrCat(run_dir, "/", kRemoteMetricsFile);
    }
    paths.push_back(std::move(p));
    t.port = !r.ports.empty()     ? r.ports[static_cast<size_t>(k)]
             : plan.base_port > 0 ? plan.base_port + k
                                  : 0;
    t.env.assign(profile.env.begin(), profile.env.end());
    t.dir = (fs::path(run_dir) / TaskDirName(t.role, t.index)).string();
    t.ready_file = t.dir + "/" + kReadyFile;
    t.stdout_file = t.dir + "/" + kStdoutFile;
    t.stderr_file = t.dir + "/" + kStderrFile;
    t.exit_file = t.dir + "/" + kExitFile;
    plan.tasks.push_back(std::move(t));
  }
  DTF_RETURN_IF_ERROR(AssignDevices(r, profile, placed, &plan, &paths));
  plan.tls = profile.tls.value_or(plan.LeavesLoopback());
  for (size_t k = 0; k < plan.tasks.size(); ++k) {
    plan.tasks[k].argv =
        batch ? r.batch_command(plan.tasks[k], paths[k].binary, paths[k].job)
              : ServeArgv(plan, plan.tasks[k], paths[k]);
  }
  DTF_RETURN_IF_ERROR(CheckPlanText(plan));
  return plan;
}

std::vector<std::string> RestartArgv(const TaskPlan& task) {
  std::vector<std::string> argv = task.argv;
  if (std::find(argv.begin(), argv.end(), "--restore") == argv.end()) {
    argv.push_back("--restore");
  }
  return argv;
}

std::string ExpandWorkDir(std::string_view work_dir, std::string_view host) {
  std::string out;
  for (size_t i = 0; i < work_dir.size();) {
    if (work_dir.substr(i).starts_with("{host}")) {
      out += host;
      i += 6;
    } else {
      out += work_dir[i++];
    }
  }
  return out;
}

}  // namespace dtf::launch
