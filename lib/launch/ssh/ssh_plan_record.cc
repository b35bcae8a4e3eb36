// What an SSH plan shows and records of its own (lib/launch/plan_hooks.h):
// its hosts and how they are reached, what is shipped to them, and where
// each task's files are.
#include <nlohmann/json.hpp>

#include "lib/base/strings.h"
#include "lib/launch/ssh/ssh_plan.h"

namespace dtf::launch::ssh {

using Json = nlohmann::ordered_json;

bool SshPlanHooks::TasksHere() const { return false; }

bool SshPlanHooks::FilesOnHosts() const { return true; }

std::string SshPlanHooks::TaskLabel(const TaskPlan& task) const {
  return StrCat(task.host, " ", task.name());
}

std::string SshPlanHooks::PlacementText(const Plan& plan) const {
  return StrCat(plan.hosts.size(), plan.hosts.size() == 1 ? " host" : " hosts",
                plan.hostfile.empty() ? "" : StrCat(" (", plan.hostfile, ")"),
                ", ", PortRangeText(plan));
}

std::string SshPlanHooks::SecretNote(const Plan&) const {
  return "; copied to each host's run directory";
}

std::string SshPlanHooks::TlsNote(const Plan&) const {
  return "; each host gets the CA certificate and its tasks' certificates "
         "and keys";
}

std::string SshPlanHooks::MoreText(const Plan& plan) const {
  return StrCat("ships:    runtime ", plan.env_id, " and job ", plan.job_id,
                plan.with_data ? " (with its data)" : "", " to each host's ",
                plan.work_dir, "\n");
}

std::string SshPlanHooks::LogsText(const TaskPlan& task) const {
  return StrCat(task.host, ":", task.dir);
}

void SshPlanHooks::WriteJson(const Plan& plan, Json* j) const {
  Json hosts = Json::array();
  for (const HostEntry& h : plan.hosts) {
    Json host{
        {"host", h.host}, {"slots", h.slots}, {"gpus", h.gpus}, {"ps", h.ps}};
    host["user"] = h.user ? Json(*h.user) : Json(nullptr);
    host["port"] = h.port ? Json(*h.port) : Json(nullptr);
    hosts.push_back(std::move(host));
  }
  Json& p = (*j)["profile"];
  p["hosts"] = std::move(hosts);
  p["hostfile"] = plan.hostfile;
  p["work_dir"] = plan.work_dir;
  p["with_data"] = plan.with_data;
  p["ssh"] = Json{{"user", plan.ssh.user},
                  {"port", plan.ssh.port},
                  {"identity_file", plan.ssh.identity_file},
                  {"known_hosts", plan.ssh.known_hosts},
                  {"config", plan.ssh.config},
                  {"connect_timeout", plan.ssh.connect_timeout},
                  {"keepalive", plan.ssh.keepalive},
                  {"reconnect_timeout", plan.ssh.reconnect_timeout}};
  (*j)["env_id"] = plan.env_id;
  (*j)["job_id"] = plan.job_id;
}

void SshPlanHooks::ReadJson(const Json& j, Plan* out) const {
  Plan& plan = *out;
  const Json& p = j.at("profile");
  for (const Json& h : p.at("hosts")) {
    HostEntry e;
    e.host = h.at("host").get<std::string>();
    e.slots = h.at("slots").get<int>();
    e.gpus = h.at("gpus").get<int>();
    e.ps = h.at("ps").get<bool>();
    if (!h.at("user").is_null()) e.user = h.at("user").get<std::string>();
    if (!h.at("port").is_null()) e.port = h.at("port").get<int>();
    plan.hosts.push_back(std::move(e));
  }
  plan.hostfile = p.at("hostfile").get<std::string>();
  plan.work_dir = p.at("work_dir").get<std::string>();
  plan.with_data = p.at("with_data").get<bool>();
  const Json& ssh = p.at("ssh");
  plan.ssh.user = ssh.at("user").get<std::string>();
  plan.ssh.port = ssh.at("port").get<int>();
  plan.ssh.identity_file = ssh.at("identity_file").get<std::string>();
  plan.ssh.known_hosts = ssh.at("known_hosts").get<std::string>();
  plan.ssh.config = ssh.at("config").get<std::string>();
  plan.ssh.connect_timeout = ssh.at("connect_timeout").get<int>();
  plan.ssh.keepalive = ssh.at("keepalive").get<int>();
  plan.ssh.reconnect_timeout =
      ssh.value("reconnect_timeout", Profile::Ssh{}.reconnect_timeout);
  plan.env_id = j.at("env_id").get<std::string>();
  plan.job_id = j.at("job_id").get<std::string>();
}

void SshPlanHooks::WriteTaskJson(const TaskPlan& task, Json* j) const {
  (*j)["work_dir"] = task.work_dir;
  (*j)["ssh"] = Json{{"user", task.ssh_user}, {"port", task.ssh_port}};
}

void SshPlanHooks::ReadTaskJson(const Json& j, TaskPlan* task) const {
  task->work_dir = j.at("work_dir").get<std::string>();
  task->ssh_user = j.at("ssh").at("user").get<std::string>();
  task->ssh_port = j.at("ssh").at("port").get<int>();
}

}  // namespace dtf::launch::ssh
