// What MakePlan asks of the backend that is to carry a plan out. The
// shared planning (MakePlanWith) checks the request, fills in what every
// plan has (ids, paths, counts, the profile's options) and hands the plan
// to the backend's PlanHooks to place its tasks. PlanHooks itself places
// them as local and SSH runs have them: on the profile's host, or
// round-robin over its hosts. A backend whose tasks are placed otherwise
// (lib/launch/slurm/slurm_plan.h) or that has no plan of processes
// (lib/launch/k8s/k8s_run.h) overrides the hooks in its own folder;
// MakePlan (lib/launch/backends.cc) picks them by the profile's backend.
#pragma once

#include <string>

#include "lib/base/status.h"
#include "lib/launch/plan.h"
#include "lib/launch/profile.h"

namespace dtf::launch {

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
  // line, TLS and devices. By default on the profile's host or, for a
  // backend that ships to hosts, over its hosts (see MakePlan in plan.h).
  // Errors as MakePlan's.
  virtual StatusOr<Plan> PlaceTasks(const PlanRequest& request,
                                    Plan plan) const;
};

// The plan of `request`, its tasks placed by `hooks`: MakePlan for a
// backend's own hooks (a backend's Place plans with its own).
StatusOr<Plan> MakePlanWith(const PlanRequest& request, const PlanHooks& hooks);

}  // namespace dtf::launch
