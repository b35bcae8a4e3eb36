#include "lib/launch/ssh/ssh_plan.h"

#include "lib/base/strings.h"
#include "lib/launch/run_layout.h"

namespace dtf::launch::ssh {

void SshPlanHooks::TakeProfile(const PlanRequest& r, Plan* plan) const {
  const Profile& profile = r.profile;
  plan->host = "";
  plan->hosts = profile.hosts;
  plan->hostfile = profile.hostfile;
  plan->work_dir = profile.work_dir;
  plan->with_data = profile.with_data;
  plan->ssh = profile.ssh;
  plan->env_id = r.env_id;
  plan->job_id = r.job_id;
}

StatusOr<std::vector<const HostEntry*>> SshPlanHooks::PlaceOnHosts(
    const Plan& plan, const Profile& profile) const {
  const auto where = [&](const char* key) { return KeyWhere(profile, key); };
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

TaskPaths SshPlanHooks::OnHost(const Plan& plan, const std::string& job_entry,
                               const HostEntry& h, TaskPlan* task) const {
  task->host = h.host;
  task->work_dir = ExpandWorkDir(plan.work_dir, h.host);
  task->ssh_user = h.user.value_or(plan.ssh.user);
  task->ssh_port = h.port.value_or(plan.ssh.port);
  const std::string run_dir = StrCat(task->work_dir, "/runs/", plan.run_id);
  TaskPaths p;
  p.binary = StrCat(task->work_dir, "/envs/", plan.env_id, "/bin/dtf");
  p.job = StrCat(task->work_dir, "/jobs/", plan.job_id, "/", job_entry);
  p.run_dir = run_dir;
  p.secret_file = StrCat(run_dir, "/", kSecretFile);
  p.metrics_out =
      plan.metrics_out.empty() ? "" : StrCat(run_dir, "/", kRemoteMetricsFile);
  return p;
}

}  // namespace dtf::launch::ssh
