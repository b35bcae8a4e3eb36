// What a Slurm plan shows and records of its own (lib/launch/plan_hooks.h):
// its [slurm] table and batch script, and tasks Slurm places.
#include <nlohmann/json.hpp>

#include "lib/base/strings.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/slurm/slurm_plan.h"

namespace dtf::launch::slurm {

using Json = nlohmann::ordered_json;

const SlurmPlanPart& SlurmPartOf(const Plan& plan) {
  static const SlurmPlanPart kNone;
  const SlurmPlanPart* part = plan.part.Get<SlurmPlanPart>();
  return part != nullptr ? *part : kNone;
}

bool SlurmPlanHooks::TasksHere() const { return false; }

std::string SlurmPlanHooks::TlsNameOf(const Plan&, const TaskPlan& task) const {
  return TaskDirName(task.role, task.index);
}

bool SlurmPlanHooks::CrossesNetwork(const Plan&) const { return true; }

bool SlurmPlanHooks::AddressesPlanned() const { return false; }

std::string SlurmPlanHooks::PlacementText(const Plan& plan) const {
  return StrCat("the nodes Slurm allocates, port ", plan.base_port,
                " + the task's place on its node");
}

std::string SlurmPlanHooks::TlsNote(const Plan&) const {
  return ", on the shared storage every node reads; each certificate names "
         "its task, which its peers check";
}

std::string SlurmPlanHooks::TlsOffText(const Plan&) const {
  return "off (tls = false): the run's secret and every tensor cross the "
         "cluster's network in plaintext";
}

std::string SlurmPlanHooks::AddressText(const TaskPlan&) const {
  return "(slurm)";
}

std::string SlurmPlanHooks::TableNote(const Plan&) const {
  return "(host and port: where Slurm places the task, in its ready file)\n";
}

std::string SlurmPlanHooks::CommandsText(const Plan& plan) const {
  // Every task runs the same command: the batch script's srun (in a batch
  // plan, it runs each task's own command, below).
  std::string out =
      StrCat("\nbatch script (", plan.run_dir,
             "/sbatch.sh; submitted with sbatch, or run with srun inside an "
             "allocation):\n",
             SlurmPartOf(plan).batch_script);
  if (plan.batch) out += TaskCommandsText(plan);
  return out;
}

void SlurmPlanHooks::WriteJson(const Plan& plan, Json* j) const {
  const SlurmPlanPart& part = SlurmPartOf(plan);
  const SlurmProfile& sl = part.profile;
  (*j)["profile"]["slurm"] = Json{{"partition", sl.partition},
                                  {"account", sl.account},
                                  {"constraint", sl.constraint},
                                  {"time_limit", sl.time_limit},
                                  {"nodes", sl.nodes},
                                  {"tasks_per_node", sl.tasks_per_node},
                                  {"gpus_per_node", sl.gpus_per_node},
                                  {"sbatch_args", sl.sbatch_args},
                                  {"srun_args", sl.srun_args},
                                  {"base_port", sl.base_port},
                                  {"run_dir", sl.run_dir}};
  (*j)["batch_script"] = part.batch_script;
}

void SlurmPlanHooks::ReadJson(const Json& j, Plan* plan) const {
  const Json& sl = j.at("profile").at("slurm");
  SlurmPlanPart& part = plan->part.Mutable<SlurmPlanPart>();
  SlurmProfile& out = part.profile;
  out.partition = sl.at("partition").get<std::string>();
  out.account = sl.at("account").get<std::string>();
  out.constraint = sl.at("constraint").get<std::string>();
  out.time_limit = sl.at("time_limit").get<std::string>();
  out.nodes = sl.at("nodes").get<int>();
  out.tasks_per_node = sl.at("tasks_per_node").get<int>();
  out.gpus_per_node = sl.at("gpus_per_node").get<int>();
  out.sbatch_args = sl.at("sbatch_args").get<std::vector<std::string>>();
  out.srun_args = sl.at("srun_args").get<std::vector<std::string>>();
  out.base_port = sl.at("base_port").get<int>();
  out.run_dir = sl.at("run_dir").get<std::string>();
  part.batch_script = j.at("batch_script").get<std::string>();
}

}  // namespace dtf::launch::slurm
