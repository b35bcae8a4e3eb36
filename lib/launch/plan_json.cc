// The plan as JSON: PlanToJson and PlanFromJson (docs/launch.md).
#include <nlohmann/json.hpp>

#include "lib/base/strings.h"
#include "lib/launch/json_text.h"
#include "lib/launch/plan.h"
#include "lib/launch/plan_hooks.h"

namespace dtf::launch {
namespace {

using Json = nlohmann::ordered_json;

constexpr int kPlanVersion = 1;

std::vector<std::string> Addresses(const Plan& plan, Role role) {
  std::vector<std::string> out;
  for (const TaskPlan& t : plan.tasks) {
    if (t.role == role) out.push_back(t.address());
  }
  return out;
}

Json PlanJson(const Plan& plan) {
  Json j;
  j["version"] = kPlanVersion;
  j["run_id"] = plan.run_id;
  j["job"] = plan.job;
  j["binary"] = plan.binary;
  j["run_dir"] = plan.run_dir;
  j["secret_file"] = plan.secret_file;
  if (!plan.s3_file.empty()) {
    j["s3_credentials"] =
        Json{{"file", plan.s3_file}, {"variables", plan.s3_variables}};
  }
  j["tls"] = plan.tls;
  if (plan.allreduce()) j["collective"] = plan.cuda_workers ? "nccl" : "gloo";
  j["profile"] = Json{{"name", plan.profile_name},
                      {"source", plan.profile_source},
                      {"backend", std::string(BackendName(plan.backend))},
                      {"ps", plan.ps},
                      {"workers", plan.workers},
                      {"host", plan.host},
                      {"base_port", plan.base_port},
                      {"threads", plan.threads},
                      {"max_restarts", plan.max_restarts}};
  if (plan.min_workers > 0) j["profile"]["min_workers"] = plan.min_workers;
  if (plan.launch_workers > 0) {
    j["profile"]["launch_workers"] = plan.launch_workers;
  }
  plan.hooks().WriteJson(plan, &j);
  j["set"] = plan.sets;
  j["metrics_out"] = plan.metrics_out;
  if (plan.resume) j["resume"] = true;
  if (plan.batch) j["batch"] = true;
  if (plan.hooks().AddressesPlanned()) {
    j["cluster"] = Json{{"ps", Addresses(plan, Role::kPs)},
                        {"workers", Addresses(plan, Role::kWorker)}};
  }
  j["chief"] = plan.chief().name();
  Json tasks = Json::array();
  for (const TaskPlan& t : plan.tasks) {
    Json env = Json::object();
    for (const auto& [name, value] : t.env) env[name] = value;
    tasks.push_back(Json{{"task", t.name()},
                         {"role", std::string(RoleName(t.role))},
                         {"index", t.index},
                         {"chief", t.chief},
                         {"host", t.host},
                         {"port", t.port},
                         {"argv", t.argv},
                         {"env", env},
                         {"dir", t.dir},
                         {"ready_file", t.ready_file},
                         {"stdout", t.stdout_file},
                         {"stderr", t.stderr_file},
                         {"exit_file", t.exit_file}});
    plan.hooks().WriteTaskJson(t, &tasks.back());
  }
  j["tasks"] = std::move(tasks);
  return j;
}

}  // namespace

std::string PlanToJson(const Plan& plan) { return JsonText(PlanJson(plan)); }

Status CheckPlanText(const Plan& plan) {
  if (std::optional<std::string> bad = FirstNonUtf8(PlanJson(plan))) {
    return InvalidArgumentError(
        StrCat("the plan's ", *bad,
               " is not UTF-8 text, which plan.json and --json hold; give "
               "the file or directory a UTF-8 name"));
  }
  return OkStatus();
}

namespace {

// One task of `plan`; DataLoss naming `name` for a role it does not know.
StatusOr<TaskPlan> TaskFromJson(const Json& t, const Plan& plan,
                                std::string_view name) {
  TaskPlan task;
  const std::string role = t.at("role").get<std::string>();
  const std::optional<Role> parsed = ParseRoleName(role);
  // A launch plan has parameter servers and workers only.
  if (!parsed || (*parsed != Role::kPs && *parsed != Role::kWorker)) {
    return DataLossError(
        StrCat(name, ": plan names an unknown role \"", role, "\""));
  }
  task.role = *parsed;
  task.index = t.at("index").get<int>();
  task.chief = t.at("chief").get<bool>();
  task.host = t.at("host").get<std::string>();
  task.port = t.at("port").get<int>();
  task.argv = t.at("argv").get<std::vector<std::string>>();
  for (const auto& [key, value] : t.at("env").items()) {
    task.env.emplace_back(key, value.get<std::string>());
  }
  task.dir = t.at("dir").get<std::string>();
  task.ready_file = t.at("ready_file").get<std::string>();
  task.stdout_file = t.at("stdout").get<std::string>();
  task.stderr_file = t.at("stderr").get<std::string>();
  task.exit_file = t.at("exit_file").get<std::string>();
  plan.hooks().ReadTaskJson(t, &task);
  return task;
}

}  // namespace

StatusOr<Plan> PlanFromJson(std::string_view text, std::string_view name) {
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return DataLossError(StrCat(name, ": not a plan (invalid JSON)"));
  }
  try {
    if (j.at("version").get<int>() != kPlanVersion) {
      return DataLossError(StrCat(name, ": plan version ",
                                  j.at("version").dump(), ", expected ",
                                  kPlanVersion));
    }
    Plan plan;
    plan.run_id = j.at("run_id").get<std::string>();
    plan.job = j.at("job").get<std::string>();
    plan.binary = j.at("binary").get<std::string>();
    plan.run_dir = j.at("run_dir").get<std::string>();
    plan.secret_file = j.at("secret_file").get<std::string>();
    if (const auto s3 = j.find("s3_credentials"); s3 != j.end()) {
      plan.s3_file = s3->at("file").get<std::string>();
      plan.s3_variables = s3->at("variables").get<std::vector<std::string>>();
    }
    // Plans written before runs had TLS have no "tls": they ran without.
    plan.tls = j.value("tls", false);
    plan.cuda_workers = j.value("collective", std::string()) == "nccl";
    const Json& p = j.at("profile");
    plan.profile_name = p.at("name").get<std::string>();
    plan.profile_source = p.at("source").get<std::string>();
    const std::string backend = p.at("backend").get<std::string>();
    const std::optional<BackendKind> kind = ParseBackendName(backend);
    if (!kind) {
      return DataLossError(
          StrCat(name, ": plan names an unknown backend \"", backend, "\""));
    }
    plan.backend = *kind;
    plan.ps = p.at("ps").get<int>();
    plan.workers = p.at("workers").get<int>();
    plan.host = p.at("host").get<std::string>();
    plan.base_port = p.at("base_port").get<int>();
    plan.threads = p.at("threads").get<int>();
    plan.max_restarts = p.at("max_restarts").get<int>();
    plan.min_workers = p.value("min_workers", 0);
    plan.launch_workers = p.value("launch_workers", 0);
    plan.hooks().ReadJson(j, &plan);
    plan.sets = j.at("set").get<std::vector<std::string>>();
    plan.metrics_out = j.at("metrics_out").get<std::string>();
    plan.resume = j.value("resume", false);
    plan.batch = j.value("batch", false);
    for (const Json& t : j.at("tasks")) {
      DTF_ASSIGN_OR_RETURN(TaskPlan task, TaskFromJson(t, plan, name));
      plan.tasks.push_back(std::move(task));
    }
    if (plan.ps < 0 || plan.workers < 1 || plan.launch_workers < 0 ||
        plan.launch_workers > plan.workers ||
        plan.tasks.size() != static_cast<size_t>(plan.ps + plan.workers)) {
      return DataLossError(StrCat(name, ": plan lists ", plan.tasks.size(),
                                  " tasks for ", plan.ps, " ps and ",
                                  plan.workers, " workers"));
    }
    return plan;
  } catch (const Json::exception& e) {
    return DataLossError(StrCat(name, ": not a plan: ", e.what()));
  }
}

}  // namespace dtf::launch
