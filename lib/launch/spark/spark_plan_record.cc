// What a Spark plan shows and records of its own (lib/launch/plan_hooks.h):
// its [spark] table, spark-submit's command line and the driver, and tasks
// Spark places.
#include <nlohmann/json.hpp>

#include "lib/base/strings.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/spark/spark_driver.h"
#include "lib/launch/spark/spark_plan.h"

namespace dtf::launch::spark {

using Json = nlohmann::ordered_json;

const SparkPlanPart& SparkPartOf(const Plan& plan) {
  static const SparkPlanPart kNone;
  const SparkPlanPart* part = plan.part.Get<SparkPlanPart>();
  return part != nullptr ? *part : kNone;
}

bool SparkPlanHooks::TasksHere() const { return false; }

std::string SparkPlanHooks::TlsNameOf(const Plan&, const TaskPlan& task) const {
  return TaskDirName(task.role, task.index);
}

bool SparkPlanHooks::CrossesNetwork(const Plan&) const { return true; }

bool SparkPlanHooks::AddressesPlanned() const { return false; }

std::string SparkPlanHooks::PlacementText(const Plan& plan) const {
  const SparkProfile& sp = SparkPartOf(plan).profile;
  return StrCat("the executors Spark gives (", sp.master, ", ",
                plan.ps + plan.workers, " executors of ", sp.executor_cores,
                " core", sp.executor_cores == 1 ? "" : "s",
                "), a free port each");
}

std::string SparkPlanHooks::TlsNote(const Plan&) const {
  return ", on the shared storage the executors read; each certificate "
         "names its task, which its peers check";
}

std::string SparkPlanHooks::TlsOffText(const Plan&) const {
  return "off (tls = false): the run's secret and every tensor cross the "
         "cluster's network in plaintext";
}

std::string SparkPlanHooks::AddressText(const TaskPlan&) const {
  return "(spark)";
}

std::string SparkPlanHooks::TableNote(const Plan&) const {
  return "(host and port: the task's executor and a port free there, in its "
         "ready file; task k is the barrier stage's partition k)\n";
}

std::string SparkPlanHooks::CommandsText(const Plan& plan) const {
  const SparkPlanPart& part = SparkPartOf(plan);
  std::string out = "\nspark-submit (its output in ";
  StrAppend(&out, plan.run_dir, "/", kSubmitStdout, " and ", kSubmitStderr,
            "):\n ");
  for (const std::string& w : part.submit) StrAppend(&out, " ", ShellQuote(w));
  StrAppend(&out, "\n\ndriver (", plan.run_dir, "/", kDriverFile, "):\n",
            part.driver);
  out += "\n";
  out += TaskCommandsText(plan);
  return out;
}

void SparkPlanHooks::WriteJson(const Plan& plan, Json* j) const {
  const SparkPlanPart& part = SparkPartOf(plan);
  const SparkProfile& sp = part.profile;
  Json conf = Json::array();
  for (const auto& [k, v] : sp.conf) conf.push_back(Json::array({k, v}));
  Json archives = Json::array();
  for (const auto& [p, a] : part.archives) {
    archives.push_back(Json::array({p, a}));
  }
  (*j)["profile"]["spark"] = Json{{"master", sp.master},
                                  {"spark_submit", sp.spark_submit},
                                  {"deploy_mode", sp.deploy_mode},
                                  {"executor_cores", sp.executor_cores},
                                  {"executor_memory", sp.executor_memory},
                                  {"python", sp.python},
                                  {"slot_wait", sp.slot_wait},
                                  {"ship", sp.ship},
                                  {"run_dir", sp.run_dir},
                                  {"conf", conf}};
  (*j)["spark_submit"] = part.submit;
  (*j)["archives"] = archives;
  (*j)["driver"] = part.driver;
}

void SparkPlanHooks::ReadJson(const Json& j, Plan* plan) const {
  const Json& sp = j.at("profile").at("spark");
  SparkPlanPart& part = plan->part.Mutable<SparkPlanPart>();
  SparkProfile& out = part.profile;
  out.master = sp.at("master").get<std::string>();
  out.spark_submit = sp.at("spark_submit").get<std::string>();
  out.deploy_mode = sp.at("deploy_mode").get<std::string>();
  out.executor_cores = sp.at("executor_cores").get<int>();
  out.executor_memory = sp.at("executor_memory").get<std::string>();
  out.python = sp.at("python").get<std::string>();
  out.slot_wait = sp.at("slot_wait").get<int>();
  out.ship = sp.at("ship").get<bool>();
  out.run_dir = sp.at("run_dir").get<std::string>();
  for (const Json& kv : sp.at("conf")) {
    out.conf.emplace_back(kv.at(0).get<std::string>(),
                          kv.at(1).get<std::string>());
  }
  part.submit = j.at("spark_submit").get<std::vector<std::string>>();
  for (const Json& pa : j.at("archives")) {
    part.archives.emplace_back(pa.at(0).get<std::string>(),
                               pa.at(1).get<std::string>());
  }
  part.driver = j.at("driver").get<std::string>();
}

}  // namespace dtf::launch::spark
