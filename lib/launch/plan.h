// The launch plan: every task of a run (role, index, host, port, command
// line, environment, files) as a pure function of the job file, the
// profile and the command-line overrides. `dtf launch --dry-run` prints it;
// the backends carry it out unchanged. Format: docs/launch.md.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/base/device_name.h"
#include "lib/base/status.h"
#include "lib/base/task_name.h"
#include "lib/launch/backend_kind.h"
#include "lib/launch/backend_part.h"
#include "lib/launch/profile.h"

namespace dtf::launch {

// The run id of a plan whose id is not chosen yet: what a dry run shows,
// and what asks Backend::Place (backend.h) to choose a fresh one.
inline constexpr char kUnchosenRunId[] = "<run-id>";
// The same for the archives an SSH run ships (dtf pack env / zip): their
// content hashes are known once they are packed at launch.
inline constexpr char kUnchosenEnvId[] = "<env-id>";
inline constexpr char kUnchosenJobId[] = "<job-id>";

// What the command line changes in the profile.
struct Overrides {
  // --ps, --workers: task counts; 0 keeps the profile's.
  int ps = 0;
  int workers = 0;
  // --set: "section.key=value" each, passed to every task as it is.
  std::vector<std::string> sets;
  // --metrics-out: an absolute path passed to the chief; "" for none.
  std::string metrics_out;
};

struct TaskPlan;
class PlanHooks;

// The command line of each task of a batch plan (PlanRequest::batch_command)
// from the task (its index among plan.workers), the program it runs on its
// host (PlanRequest::binary, or the shipped runtime over SSH) and the job
// as its host has it (PlanRequest::job, or over SSH
// <work_dir>/jobs/<job id>/<job entry>, the unpacked BatchFiles archive).
using BatchCommand = std::function<std::vector<std::string>(
    const TaskPlan& task, const std::string& binary, const std::string& job)>;

// What the tasks of a batch plan on backend "ssh" read: `shipped` (entry
// name in the archive, local file) goes to every host as the run's job
// archive in place of dtf pack zip's, its manifest's entry `entry`; each
// of `on_hosts` (absolute paths) is not shipped but must be a readable
// file at that path on every host, which the preflight checks. The
// archives (runtime and job) are packed into `pack_dir` ("" for
// <job dir>/.dtf/pack).
struct BatchFiles {
  std::vector<std::pair<std::string, std::string>> shipped;
  std::string entry;
  std::vector<std::string> on_hosts;
  std::string pack_dir;
};

struct PlanRequest {
  // The job file, absolute.
  std::string job;
  // The program every task runs (normally the dtf binary), absolute.
  std::string binary;
  // The directory holding run directories; "" means <job dir>/.dtf/runs.
  std::string runs_dir;
  // The run's id; kUnchosenRunId for a dry run.
  std::string run_id = kUnchosenRunId;
  Profile profile;
  Overrides overrides;
  // The port of each task in plan order (PS, then workers), as chosen at
  // launch; empty: the profile's (0 for each task when base_port is 0).
  std::vector<int> ports;
  // backend = "ssh": the ids (content hashes) of the runtime and job
  // archives, and the job file's path inside the job archive ("" for the
  // job file's own name).
  std::string env_id = kUnchosenEnvId;
  std::string job_id = kUnchosenJobId;
  std::string job_entry;
  // The job's train.device and whether its train.mode is "allreduce" (with
  // the --set overrides applied), as the launcher read them.
  DeviceName job_device;
  bool allreduce = false;
  // The job's train.checkpoint_every_steps (with the --set overrides): a
  // profile with max_restarts > 0 needs it above 0, since a restarted task
  // restores the run's last checkpoint.
  int64_t job_checkpoint_every_steps = 0;
  // dtf launch --resume: the run `run_id` goes on from its last checkpoint
  // (its run directory exists; every task gets --restore).
  bool resume = false;
  // Set: a batch plan (dtf predict --profile). Its tasks are workers only
  // that run this command instead of `dtf serve`, each to the end: the run
  // succeeds once every task has exited 0, and the first task to fail ends
  // it (no restarts), naming the task and quoting its stderr. Each task
  // must still write its ready file (TaskPlan::ready_file) within
  // RunOptions::start_timeout. Null (default): a training plan.
  BatchCommand batch_command;
  // A batch plan on backend "ssh": the files shipped and checked.
  BatchFiles batch_files;
  // The S3 settings and credentials every task gets (docs/storage.md,
  // "Credentials of a run's tasks"): the bytes of <run dir>/s3-credentials,
  // which the launcher writes (mode 0600) and ships as it does the run's
  // secret, and every task's dtf serve reads (--s3-credentials) before it
  // opens an s3:// path. `s3_variables` names what the file sets (the plan
  // shows the names, never the values). Empty (the default): no file. A
  // batch plan's tasks get none.
  std::string s3_credentials;
  std::vector<std::string> s3_variables;
};

struct TaskPlan {
  Role role = Role::kWorker;
  int index = 0;
  bool chief = false;  // worker 0
  std::string host;
  int port = 0;  // 0: chosen at launch
  std::vector<std::string> argv;
  // Set for the task on top of the launcher's environment, sorted by name.
  std::vector<std::pair<std::string, std::string>> env;
  // <run dir>/<role>-<index> and the files in it.
  std::string dir;
  std::string ready_file;
  std::string stdout_file;
  std::string stderr_file;
  std::string exit_file;
  // backend = "ssh": the host's work directory (the paths above are under
  // it, on that host) and how it is reached; "" and 0 for local tasks.
  std::string work_dir;
  std::string ssh_user;
  int ssh_port = 0;

  // "ps:0", "worker:1": how commands and logs name the task.
  std::string name() const { return TaskName{role, index}.ToString(); }
  std::string address() const { return host + ":" + std::to_string(port); }
};

struct Plan {
  std::string run_id;
  std::string job;
  std::string binary;
  std::string run_dir;
  std::string secret_file;
  // <run dir>/s3-credentials when the tasks get S3 settings and
  // credentials (PlanRequest::s3_credentials), with the names of the
  // variables it sets; "" and none otherwise.
  std::string s3_file;
  std::vector<std::string> s3_variables;
  // The profile as applied (overrides included).
  std::string profile_name;
  std::string profile_source;
  BackendKind backend = kDefaultBackend;
  int ps = 0;
  // Worker slots (the tasks' --workers): the profile's workers, or its
  // max_workers where set.
  int workers = 0;
  // The workers started at launch where the profile's max_workers makes
  // more slots: worker slots from this one on are reserved for `dtf
  // scale` (Reserved). 0: every slot is started at launch.
  int launch_workers = 0;
  std::string host;
  int base_port = 0;
  int threads = 0;
  int max_restarts = 0;
  // The profile's min_workers (0: off): lib/launch/restart_policy.h.
  int min_workers = 0;
  // Every task restores the run's last checkpoint (dtf launch --resume).
  bool resume = false;
  // A batch plan (PlanRequest::batch_command): workers only, each running
  // to the end; the run ends when all have exited 0 or one has failed.
  bool batch = false;
  // Mutual TLS between the tasks (the profile's `tls`, by default whether
  // the plan leaves loopback): the launcher writes the run's certificates
  // to <run dir>/tls (lib/launch/run_tls.h) and every task gets --tls-dir.
  bool tls = false;
  // The workers compute on GPUs (the profile's device, else the job's): an
  // allreduce run's collective is NCCL there, Gloo on CPUs.
  bool cuda_workers = false;
  std::vector<std::string> sets;
  std::string metrics_out;
  // backend = "ssh": the hosts, where they are listed, how they are
  // reached, and what is shipped to them (the profile's keys).
  std::vector<HostEntry> hosts;
  std::string hostfile;
  std::string work_dir;
  bool with_data = false;
  Profile::Ssh ssh;
  std::string env_id;
  std::string job_id;
  // What the backend plans beyond the above, which only it reads (slurm:
  // the [slurm] table and the batch script, lib/launch/slurm/slurm_plan.h).
  BackendPart part;
  // PS 0..ps-1, then workers 0..workers-1.
  std::vector<TaskPlan> tasks;

  const TaskPlan& chief() const { return tasks[static_cast<size_t>(ps)]; }
  // Whether `task` is a worker slot reserved for `dtf scale`: planned
  // (host, port, directory) but not started at launch.
  bool Reserved(const TaskPlan& task) const {
    return task.role == Role::kWorker && launch_workers > 0 &&
           task.index >= launch_workers;
  }
  // The workers started at launch.
  int StartedAtLaunch() const {
    return launch_workers > 0 ? launch_workers : workers;
  }
  // Allreduce: a training plan without parameter servers (every other mode
  // has at least one), whose workers wait for each other in every
  // collective.
  bool allreduce() const { return ps == 0 && !batch; }
  // What the shared code asks of the plan's backend (PlanHooksOf).
  const PlanHooks& hooks() const;
  // The task named `name` ("worker:1"), or nullptr.
  const TaskPlan* Find(std::string_view name) const;
  // Whether a task's host is not a loopback one (rpc::IsLoopbackHost): the
  // run's traffic crosses a network.
  bool LeavesLoopback() const;
};

// Checks one --set value: "section.key=value" where section and key (and
// any further dotted parts) are letters, digits, '_' or '-', and the value
// is not empty.
Status ValidateSet(std::string_view set);

// Workers on CUDA (the profile's device, else the job's) each get a GPU of
// their host: CUDA_VISIBLE_DEVICES in their environment and --set
// train.device=cuda, so the task's first visible GPU is the one planned.
// "cuda:N" gives every worker GPU N; "cuda" gives the workers of a host its
// GPUs in turn, sharing them round-robin in PS modes when there are more
// workers than GPUs (allreduce needs one GPU per worker). A host's GPUs are
// its hostfile gpus= (SSH) or the profile's gpus (local; 0 leaves it open:
// worker i gets GPU i). In allreduce mode the plan has no parameter servers.
//
// The plan; InvalidArgument for overrides that do not fit (a relative
// --metrics-out, a port range past 65535, more workers than the hosts have
// slots, no host that may run a PS; naming the profile key), and
// FailedPrecondition for max_restarts > 0 without periodic checkpoints
// (naming the profile's key and the job's train.checkpoint_every_steps).
//
// With backend = "slurm", the run directory is under --runs-dir, else
// slurm.run_dir, else the job's .dtf/runs; every task runs the batch
// script's srun command (lib/launch/slurm/batch_script.h); TLS is on unless
// the profile turns it off, with certificates that name their tasks;
// max_restarts > 0 is refused (FailedPrecondition naming the key).
//
// With backend = "ssh", parameter servers go round-robin over the hosts
// that allow them, and workers round-robin over the hosts with slots left
// (a host takes at most `slots` workers). Each task's paths are on its host,
// under <work_dir>/runs/<run id>/, and it runs the shipped runtime,
// <work_dir>/envs/<env id>/bin/dtf, on the shipped job,
// <work_dir>/jobs/<job id>/<job entry>; the chief's --metrics-out is
// <work_dir>/runs/<run id>/metrics.json there (fetched at the end). With
// TLS on, each task's --tls-dir is <its run dir>/tls on its host.
//
// With backend = "kubernetes", FailedPrecondition naming the profile's
// `backend` key: that run is handed to the cluster (lib/launch/hand_off.h).
//
// MakePlan asks the profile's backend through its PlanHooks
// (lib/launch/plan_hooks.h), which lib/launch/backends.cc picks.
StatusOr<Plan> MakePlan(const PlanRequest& request);

// That warning, for a run off loopback whose `profile` has tls = false (a
// Kubernetes run's pods).
std::string TlsOffWarning(const Profile& profile);

// The plan as JSON (docs/launch.md), fields in a fixed order: the same plan
// gives the same bytes.
std::string PlanToJson(const Plan& plan);
// OK when every string of the plan (paths, hosts, arguments) is UTF-8, as
// PlanToJson needs to write it as it is; else InvalidArgument naming the
// first that is not ("the plan's /job: \"/data/r\xE9sum\xE9/dtf.toml\"
// is not UTF-8 text ...").
Status CheckPlanText(const Plan& plan);
// The plan as PlanToJson wrote it; DataLoss naming `name` when it is not.
StatusOr<Plan> PlanFromJson(std::string_view json, std::string_view name);

// The plan for people: a table of tasks, then each command line (shell
// quoted) with its environment.
std::string PlanToText(const Plan& plan);

// A remote work directory with "{host}" replaced by `host`.
std::string ExpandWorkDir(std::string_view work_dir, std::string_view host);

// The command line of `task` started again after it failed (max_restarts):
// its own with --restore (once), whatever its role: a parameter server
// restores its shard and step, a worker reads on from the input position
// the run's last checkpoint recorded for it (docs/launch.md, *Restarts*).
std::vector<std::string> RestartArgv(const TaskPlan& task);

}  // namespace dtf::launch
