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
};

// The plan of `request`, its tasks placed by `hooks`: MakePlan for a
// backend's own hooks (a backend's Place plans with its own).
StatusOr<Plan> MakePlanWith(const PlanRequest& request, const PlanHooks& hooks);

}  // namespace dtf::launch
