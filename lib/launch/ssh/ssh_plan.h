// What MakePlan asks of the SSH backend (lib/launch/plan_hooks.h): the
// profile's hosts and how they are reached, parameter servers round-robin
// over the hosts that allow them and workers round-robin over the hosts
// with slots left (a host takes at most `slots` workers), and each task's
// paths on its host: under <work_dir>/runs/<run id>/, running the shipped
// runtime (<work_dir>/envs/<env id>/bin/dtf) on the shipped job
// (<work_dir>/jobs/<job id>/<job entry>).
#pragma once

#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/hostfile.h"
#include "lib/launch/plan.h"
#include "lib/launch/plan_hooks.h"
#include "lib/launch/profile.h"

namespace dtf::launch::ssh {

// The shared keys of a profile, with its hosts and how they are reached.
class SshProfileTable : public ProfileTable {
 public:
  bool ReadsHosts() const override { return true; }
};

class SshPlanHooks : public PlanHooks {
 public:
  // The hosts, hostfile, work_dir, with_data and [ssh] of the profile, and
  // the archives' ids of the request.
  void TakeProfile(const PlanRequest& request, Plan* plan) const override;
  // InvalidArgument naming hosts/hostfile when no host may run a parameter
  // server or the workers outnumber the slots.
  StatusOr<std::vector<const HostEntry*>> PlaceOnHosts(
      const Plan& plan, const Profile& profile) const override;
  // The task's host, work directory and SSH user and port (the host's
  // line, else [ssh]), and its paths there.
  TaskPaths OnHost(const Plan& plan, const std::string& job_entry,
                   const HostEntry& host, TaskPlan* task) const override;

  // The tasks run on their hosts, with their files there (ssh_plan_record.cc).
  bool TasksHere() const override;
  bool FilesOnHosts() const override;
  // "h1 worker:1".
  std::string TaskLabel(const TaskPlan& task) const override;
  // The hosts, the secret and TLS files copied to them, what is shipped,
  // and "h1:<dir>" for a task's logs.
  std::string PlacementText(const Plan& plan) const override;
  std::string SecretNote(const Plan& plan) const override;
  std::string TlsNote(const Plan& plan) const override;
  std::string MoreText(const Plan& plan) const override;
  std::string LogsText(const TaskPlan& task) const override;
  // The hosts, [ssh], work_dir, with_data and the archives' ids; each
  // task's work directory and SSH user and port.
  void WriteJson(const Plan& plan, nlohmann::ordered_json* j) const override;
  void ReadJson(const nlohmann::ordered_json& j, Plan* plan) const override;
  void WriteTaskJson(const TaskPlan& task,
                     nlohmann::ordered_json* j) const override;
  void ReadTaskJson(const nlohmann::ordered_json& j,
                    TaskPlan* task) const override;
};

}  // namespace dtf::launch::ssh
