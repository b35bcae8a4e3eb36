#include "lib/launch/run_registry.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/launch/json_text.h"
#include "lib/launch/plan_hooks.h"
#include "lib/launch/run_layout.h"

namespace dtf::launch {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

// tasks.json's own text keys; any other is a backend's (RunRecord::backend).
const std::set<std::string> kSharedTextKeys = {"run_id", "state", "message"};

Json OptionalInt(const std::optional<int64_t>& v) {
  return v ? Json(*v) : Json(nullptr);
}

StatusOr<Json> ReadJson(const std::string& path) {
  DTF_ASSIGN_OR_RETURN(const std::string text, ReadFileToString(path));
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return DataLossError(StrCat(path, ": not valid JSON"));
  }
  return j;
}

// The state named by `j`'s "state"; DataLoss naming `path` for any other
// text. Json::exception when it is missing or not a string.
StatusOr<TaskState> TaskStateOf(const Json& j, const std::string& path) {
  const std::string name = j.at("state").get<std::string>();
  if (std::optional<TaskState> state = ParseTaskState(name)) return *state;
  return DataLossError(StrCat(path, ": unknown task state \"", name, "\""));
}

StatusOr<RunState> RunStateOf(const Json& j, const std::string& path) {
  const std::string name = j.at("state").get<std::string>();
  if (std::optional<RunState> state = ParseRunState(name)) return *state;
  return DataLossError(StrCat(path, ": unknown run state \"", name, "\""));
}

}  // namespace

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Status WriteRunRecord(const std::string& run_dir, const RunRecord& r) {
  Json j;
  j["run_id"] = r.run_id;
  j["state"] = std::string(RunStateName(r.state));
  j["exit_code"] = r.exit_code ? Json(*r.exit_code) : Json(nullptr);
  j["message"] = r.message;
  j["started_ms"] = r.started_ms;
  j["ended_ms"] = OptionalInt(r.ended_ms);
  j["supervisor"] = Json{{"pid", r.supervisor.pid},
                         {"start_ticks", r.supervisor.start_ticks},
                         {"detached", r.detached}};
  for (const auto& [key, value] : r.backend) j[key] = value;
  Json tasks = Json::array();
  for (const TaskRecord& t : r.tasks) {
    tasks.push_back(Json{{"task", t.task},
                         {"pid", t.process.pid},
                         {"pgid", t.process.pid},
                         {"start_ticks", t.process.start_ticks},
                         {"address", t.address},
                         {"state", std::string(TaskStateName(t.state))},
                         {"restarts", t.restarts}});
  }
  j["tasks"] = std::move(tasks);
  return WriteFileAtomically((fs::path(run_dir) / kTasksFile).string(),
                             JsonText(j));
}

StatusOr<RunRecord> ReadRunRecord(const std::string& run_dir) {
  const std::string path = (fs::path(run_dir) / kTasksFile).string();
  DTF_ASSIGN_OR_RETURN(const Json j, ReadJson(path));
  try {
    RunRecord r;
    r.run_id = j.at("run_id").get<std::string>();
    DTF_ASSIGN_OR_RETURN(r.state, RunStateOf(j, path));
    if (!j.at("exit_code").is_null()) r.exit_code = j["exit_code"].get<int>();
    r.message = j.at("message").get<std::string>();
    r.started_ms = j.at("started_ms").get<int64_t>();
    if (!j.at("ended_ms").is_null()) r.ended_ms = j["ended_ms"].get<int64_t>();
    const Json& s = j.at("supervisor");
    r.supervisor.pid = s.at("pid").get<pid_t>();
    r.supervisor.start_ticks = s.at("start_ticks").get<uint64_t>();
    r.detached = s.at("detached").get<bool>();
    for (const auto& [key, value] : j.items()) {
      if (value.is_string() && !kSharedTextKeys.contains(key)) {
        r.backend[key] = value.get<std::string>();
      }
    }
    for (const Json& t : j.at("tasks")) {
      TaskRecord task;
      task.task = t.at("task").get<std::string>();
      task.process.pid = t.at("pid").get<pid_t>();
      task.process.start_ticks = t.at("start_ticks").get<uint64_t>();
      task.address = t.at("address").get<std::string>();
      DTF_ASSIGN_OR_RETURN(task.state, TaskStateOf(t, path));
      task.restarts = t.value("restarts", 0);
      r.tasks.push_back(std::move(task));
    }
    return r;
  } catch (const Json::exception& e) {
    return DataLossError(StrCat(path, ": ", e.what()));
  }
}

Status WriteExitRecord(const std::string& path, const ExitRecord& r) {
  Json j;
  j["task"] = r.task;
  j["state"] = std::string(TaskStateName(r.state));
  j["exit_code"] = r.exit_code ? Json(*r.exit_code) : Json(nullptr);
  j["signal"] = r.signal;
  j["finished_ms"] = r.finished_ms;
  return WriteFileAtomically(path, JsonText(j));
}

StatusOr<std::optional<ExitRecord>> ReadExitRecord(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::optional<ExitRecord>();
  DTF_ASSIGN_OR_RETURN(const Json j, ReadJson(path));
  try {
    ExitRecord r;
    r.task = j.at("task").get<std::string>();
    DTF_ASSIGN_OR_RETURN(r.state, TaskStateOf(j, path));
    if (!j.at("exit_code").is_null()) r.exit_code = j["exit_code"].get<int>();
    r.signal = j.at("signal").get<int>();
    r.finished_ms = j.at("finished_ms").get<int64_t>();
    return std::optional<ExitRecord>(std::move(r));
  } catch (const Json::exception& e) {
    return DataLossError(StrCat(path, ": ", e.what()));
  }
}

namespace {

// When run directory `dir` was handed to a backend's engine (its record
// was written; 0 when that cannot be read); nullopt when it was not.
std::optional<int64_t> HandedOffMs(const fs::path& dir) {
  std::error_code ec;
  for (BackendKind kind : kAllBackends) {
    if (!PlanHooksOf(kind).HandsOff()) continue;
    const fs::path record = dir / HandOffRecordName(kind);
    if (!fs::exists(record, ec)) continue;
    const auto written = fs::last_write_time(record, ec);
    return ec ? 0
              : std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::file_clock::to_sys(written).time_since_epoch())
                    .count();
  }
  return std::nullopt;
}

}  // namespace

StatusOr<std::vector<std::string>> ListRuns(const std::string& runs_dir) {
  std::vector<std::pair<int64_t, std::string>> runs;
  std::error_code ec;
  if (!fs::exists(runs_dir, ec)) return std::vector<std::string>();
  fs::directory_iterator it(runs_dir, ec);
  if (ec) return ErrnoToStatus(ec.value(), runs_dir);
  for (const fs::directory_entry& e : it) {
    if (!e.is_directory(ec)) continue;
    const std::string id = e.path().filename().string();
    // A run handed to an engine has that engine's record, no plan.
    if (const std::optional<int64_t> handed = HandedOffMs(e.path())) {
      runs.emplace_back(*handed, id);
      continue;
    }
    if (!fs::exists(e.path() / kPlanFile, ec)) continue;
    StatusOr<RunRecord> record = ReadRunRecord(e.path().string());
    runs.emplace_back(record.ok() ? record->started_ms : 0, id);
  }
  std::sort(runs.begin(), runs.end());
  std::vector<std::string> ids;
  for (auto& [started, id] : runs) ids.push_back(std::move(id));
  return ids;
}

StatusOr<std::string> FindRunDir(const std::string& runs_dir,
                                 const std::string& id) {
  DTF_ASSIGN_OR_RETURN(const std::vector<std::string> runs, ListRuns(runs_dir));
  if (runs.empty()) {
    return NotFoundError(
        StrCat("no runs in ", runs_dir, " (start one with dtf launch)"));
  }
  if (id.empty()) return (fs::path(runs_dir) / runs.back()).string();
  std::vector<std::string> matches;
  for (const std::string& run : runs) {
    if (run == id) return (fs::path(runs_dir) / run).string();
    if (run.starts_with(id)) matches.push_back(run);
  }
  if (matches.size() == 1) return (fs::path(runs_dir) / matches[0]).string();
  if (matches.empty()) {
    return NotFoundError(StrCat("no run ", id, " in ", runs_dir,
                                " (the latest is ", runs.back(), ")"));
  }
  return InvalidArgumentError(StrCat("run ", id, " is ambiguous in ", runs_dir,
                                     ": ", matches[0], ", ", matches[1],
                                     matches.size() > 2 ? ", ..." : ""));
}

StatusOr<RunView> LoadRun(const std::string& run_dir) {
  RunView view;
  view.dir = run_dir;
  const std::string plan_path = (fs::path(run_dir) / kPlanFile).string();
  DTF_ASSIGN_OR_RETURN(const std::string plan_text,
                       ReadFileToString(plan_path));
  DTF_ASSIGN_OR_RETURN(view.plan, PlanFromJson(plan_text, plan_path));
  DTF_ASSIGN_OR_RETURN(view.record, ReadRunRecord(run_dir));
  for (const TaskPlan& t : view.plan.tasks) {
    DTF_ASSIGN_OR_RETURN(std::optional<ExitRecord> exit,
                         ReadExitRecord(t.exit_file));
    if (exit) view.exits[t.name()] = std::move(*exit);
  }
  return view;
}

bool TaskStarted(const RunView& run, const TaskRecord& t) {
  // A task is a process of its own, or runs in what the backend recorded
  // once it made it (a Slurm job).
  return t.process.pid > 0 || !run.record.backend.empty();
}

}  // namespace dtf::launch
