// What MakePlan asks of the backend that is to carry a plan out. The
// shared planning (MakePlanWith) checks the request, fills in what every
// plan has (ids, paths, counts, the profile's options) and hands the plan
// to the backend's PlanHooks to place its tasks. PlanHooks itself places
// them as a local run has them, on the profile's host, through hooks a
// backend may override. A backend whose tasks are placed otherwise
// (lib/launch/slurm/slurm_plan.h), whose tasks run on hosts of their own
// (lib/launch/ssh/ssh_plan.h) or that has no plan of processes
// (lib/launch/k8s/k8s_run.h) overrides the hooks in its own folder;
// MakePlan (lib/launch/backends.cc) picks them by the profile's backend.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/plan.h"
#include "lib/launch/profile.h"

namespace dtf::launch {

// Where a task's files are as its host sees them: on this machine, or on
// its host for SSH.
struct TaskPaths {
  std::string binary;
  std::string job;
  std::string run_dir;
  std::string secret_file;
  std::string metrics_out;
  // "train.device=..." for a worker whose device the plan sets.
  std::string device_set;
};

class PlanHooks {
 public:
  virtual ~PlanHooks() = default;

  // Refuses a profile this backend cannot carry out, naming the profile
  // key; checked before anything else is planned. OK by default.
  virtual Status CheckProfile(const Profile& profile) const;
  // Where the run directory goes when the request names no runs
  // directory; "" (the default) for the job directory's .dtf/runs.
  virtual std::string RunsDir(const Profile& profile) const;
  // Places the tasks of `plan`, whose ids, paths, counts and options are
  // filled in: each task's host, port, files, environment and command
  // line, TLS and devices. By default with the three hooks below: every
  // task on the profile's host, or on the hosts PlaceOnHosts gives (see
  // MakePlan in plan.h). Errors as MakePlan's.
  virtual StatusOr<Plan> PlaceTasks(const PlanRequest& request,
                                    Plan plan) const;

  // PlaceTasks' steps. Takes into `plan` what its tasks need of the
  // profile and the request beyond what every plan has (the hosts, how
  // they are reached, the ids of what is shipped); nothing by default.
  virtual void TakeProfile(const PlanRequest& request, Plan* plan) const;
  // The host of each task (plan order), among plan.hosts; empty (the
  // default) for every task on plan.host with the launcher's paths.
  // InvalidArgument naming the profile key when the hosts cannot take
  // the tasks.
  virtual StatusOr<std::vector<const HostEntry*>> PlaceOnHosts(
      const Plan& plan, const Profile& profile) const;
  // For `task`, placed on `host` by PlaceOnHosts: how it is reached there
  // (its host and whatever else the backend records) and its paths on that
  // host (`job_entry`: the job file's path in the shipped job). By
  // default the host's name and the launcher's paths.
  virtual TaskPaths OnHost(const Plan& plan, const std::string& job_entry,
                           const HostEntry& host, TaskPlan* task) const;

  // What the shared code asks of a plan's backend once it is made (Plan::
  // hooks()); the defaults are a local run's answers.

  // Whether a run is handed to the backend's own engine, which starts,
  // restarts and stops the tasks: there is no plan of processes, and dtf
  // launch, status, logs and stop go through HandOffRun and
  // QueryHandedOffRun (lib/launch/hand_off.h). False by default.
  virtual bool HandsOff() const;

  // The tasks are processes of this machine, known by the process groups
  // tasks.json records (true by default).
  virtual bool TasksHere() const;
  // Whether the launcher restarts an allreduce run's workers at another
  // size (min_workers, max_workers: docs/launch.md, *Elastic workers*),
  // stopping and starting each itself (true by default: local, ssh).
  virtual bool ResizesAllreduce() const;
  // A task's files (logs, checkpoints, exit.json) are on its own host,
  // reached through the backend's RunSource (false by default).
  virtual bool FilesOnHosts() const;
  // The name task `task`'s TLS certificate gives its peers to check: its
  // host by default.
  virtual std::string TlsNameOf(const Plan& plan, const TaskPlan& task) const;
  // Whether the run's traffic crosses a network (Plan::LeavesLoopback by
  // default).
  virtual bool CrossesNetwork(const Plan& plan) const;
  // What task `task` is shown as in logs and output prefixes
  // ("worker:1", or "h1 worker:1" where tasks have hosts of their own).
  virtual std::string TaskLabel(const TaskPlan& task) const;

  // How PlanToText words what differs by backend: where the tasks run and
  // on which ports ("127.0.0.1, ports 2222-2224"); what follows the secret
  // file's mode and the TLS directory ("" by default); the TLS line when
  // TLS is off; lines after the TLS line ("" by default); a task's
  // address and where its logs are; the note under the task table; and
  // the commands (each task's by default).
  virtual std::string PlacementText(const Plan& plan) const;
  virtual std::string SecretNote(const Plan& plan) const;
  virtual std::string TlsNote(const Plan& plan) const;
  virtual std::string TlsOffText(const Plan& plan) const;
  virtual std::string MoreText(const Plan& plan) const;
  virtual std::string AddressText(const TaskPlan& task) const;
  virtual std::string LogsText(const TaskPlan& task) const;
  virtual std::string TableNote(const Plan& plan) const;
  virtual std::string CommandsText(const Plan& plan) const;

  // What plan.json holds of the backend's own beside what every plan has
  // (nothing by default): written into the document `plan` and each task's
  // object, read back from them. Reading throws nlohmann::json's
  // exceptions for a missing or mistyped key (PlanFromJson words them).
  virtual void WriteJson(const Plan& plan, nlohmann::ordered_json* j) const;
  virtual void ReadJson(const nlohmann::ordered_json& j, Plan* plan) const;
  virtual void WriteTaskJson(const TaskPlan& task,
                             nlohmann::ordered_json* j) const;
  virtual void ReadTaskJson(const nlohmann::ordered_json& j,
                            TaskPlan* task) const;
  // Whether plan.json lists the cluster's addresses: known when the plan is
  // made (true by default).
  virtual bool AddressesPlanned() const;
};

// The warning `dtf launch` prints for a plan whose traffic crosses a
// network (PlanHooks::CrossesNetwork) with TLS turned off by `profile`
// ("<file>:<line>:<col>: tls = false: ..."); "" for any other plan.
std::string PlaintextWarning(const Plan& plan, const Profile& profile);

// "ports 2222-2224", or "ports chosen at launch" for base port 0.
std::string PortRangeText(const Plan& plan);

// Each task's command line, one flag per line, as PlanToText shows them.
std::string TaskCommandsText(const Plan& plan);

// The planning hooks of backend `kind` (MakePlan plans with them, Plan::
// hooks() answers with them). Defined with the backends' factory
// (lib/launch/backends.cc), which every program that links the launch core
// links.
const PlanHooks& PlanHooksOf(BackendKind kind);

// The plan of `request`, its tasks placed by `hooks`: MakePlan for a
// backend's own hooks (a backend's Place plans with its own).
StatusOr<Plan> MakePlanWith(const PlanRequest& request, const PlanHooks& hooks);

// The profile's min_workers against `request` (MakePlan checks it, and so
// does a backend that hands its runs off): refused for an allreduce job
// unless `hooks` resize allreduce runs (FailedPrecondition) and above the
// run's workers (InvalidArgument), each naming the profile's key.
Status CheckMinWorkers(const PlanRequest& request, const PlanHooks& hooks);
// The profile's max_workers likewise: at least the run's workers.
Status CheckMaxWorkers(const PlanRequest& request, const PlanHooks& hooks);

// A batch plan's task gets the run's S3 settings and credentials as a
// training task does: `--s3-credentials <run_dir>/s3-credentials` after
// its command, where `run_dir` is the run directory as its host has it
// (nothing when the plan has no s3_file). The command must take the flag
// (dtf predict and dtf gen-records do).
void AppendBatchS3(const Plan& plan, const std::string& run_dir,
                   TaskPlan* task);

}  // namespace dtf::launch
