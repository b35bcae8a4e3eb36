#include "lib/launch/run_status.h"

#include <algorithm>
#include <ctime>
#include <nlohmann/json.hpp>
#include <optional>

#include "lib/base/os.h"
#include "lib/base/strings.h"
#include "lib/launch/backend.h"
#include "lib/launch/json_text.h"
#include "lib/launch/plan_hooks.h"
#include "lib/launch/run_control.h"
#include "lib/launch/run_registry.h"
#include "lib/launch/run_tls.h"
#include "lib/launch/status_client.h"
#include "lib/rpc/credentials.h"

namespace dtf::launch {
namespace {

using Json = nlohmann::ordered_json;

template <typename T>
Json OrNull(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

std::string LocalTime(int64_t ms) {
  const std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%d %H:%M:%S", &tm);
  return buffer;
}

std::string Duration(int64_t ms) {
  int64_t s = std::max<int64_t>(ms, 0) / 1000;
  if (s < 60) return StrCat(s, "s");
  if (s < 3600) return StrCat(s / 60, "m", fmt::format("{:02d}", s % 60), "s");
  return StrCat(s / 3600, "h", fmt::format("{:02d}", (s / 60) % 60), "m");
}

}  // namespace

bool RunStatus::over() const { return IsFinal(state); }

StatusOr<RunStatus> CollectRunStatus(const std::string& run_dir,
                                     std::chrono::milliseconds deadline) {
  DTF_ASSIGN_OR_RETURN(RunView run, LoadRun(run_dir));
  DTF_RETURN_IF_ERROR(ReconcileRun(&run));
  RunStatus s;
  s.run_id = run.plan.run_id;
  s.run_dir = run_dir;
  s.state = run.record.state;
  s.exit_code = run.record.exit_code;
  s.message = run.record.message;
  s.started_ms = run.record.started_ms;
  s.ended_ms = run.record.ended_ms;
  s.detached = run.record.detached;
  for (size_t i = 0; i < run.plan.tasks.size(); ++i) {
    const TaskPlan& plan = run.plan.tasks[i];
    TaskStatusRow row;
    row.task = plan.name();
    row.address = plan.host.empty() ? std::string() : plan.address();
    if (i < run.record.tasks.size()) {
      const TaskRecord& r = run.record.tasks[i];
      row.state = TaskStateName(r.state);
      row.pid = r.process.pid;
      row.restarts = r.restarts;
      if (!r.address.empty()) row.address = r.address;
      row.alive = TaskStarted(run, r) && !IsFinal(r.state) &&
                  (!run.plan.hooks().TasksHere() || GroupAlive(r.process));
    }
    if (auto it = run.exits.find(row.task); it != run.exits.end()) {
      row.state = TaskStateName(it->second.state);
      row.exit_code = it->second.exit_code;
      row.alive = false;
    }
    s.tasks.push_back(std::move(row));
  }
  const TaskStatusRow& chief = s.tasks[static_cast<size_t>(run.plan.ps)];
  s.chief = chief.task;
  s.chief_address = chief.address;
  // A batch plan's tasks (dtf predict --profile) serve no coordinator: the
  // states are those tasks.json records.
  if (s.over() || run.plan.batch) return s;
  if (!chief.alive) {
    s.chief_error = StrCat("the chief (", chief.task, ") is not running");
    return s;
  }
  if (s.chief_address.empty()) {
    // A Slurm task's address is known once its ready file is there.
    s.chief_error = StrCat("the chief (", chief.task, ") has no address yet");
    return s;
  }
  StatusOr<std::string> secret = rpc::ReadSecretFile(run.plan.secret_file);
  if (!secret.ok()) {
    s.chief_error = std::string(Message(secret.status()));
    return s;
  }
  std::optional<ClientTls> tls;
  if (run.plan.tls) {
    StatusOr<LauncherTls> files = ReadLauncherTls(TlsDirOf(run.plan.run_dir));
    if (!files.ok()) {
      s.chief_error = std::string(Message(files.status()));
      return s;
    }
    // The chief's certificate names its host as the plan has it, also when
    // the call goes through a tunnel; under Slurm, its task.
    tls = ClientTls{files->ca_cert, files->cert, files->key,
                    run.plan.hooks().TlsNameOf(run.plan, run.plan.chief())};
  }
  const ClientTls* client_tls = tls ? &*tls : nullptr;
  StatusOr<CoordinatorStatus> reply = QueryCoordinator(
      s.chief_address, s.run_id, *secret, deadline, client_tls);
  if (!reply.ok() && run.plan.hooks().FilesOnHosts() &&
      reply.status().code() != StatusCode::kPermissionDenied) {
    // The chief's port may not be reachable from here: another way.
    StatusOr<std::unique_ptr<RunSource>> source = OpenRunSource(run.plan);
    StatusOr<ChiefRoute> route =
        source.ok() ? (*source)->RouteToChief() : source.status();
    if (route.ok()) {
      StatusOr<CoordinatorStatus> via = QueryCoordinator(
          route->address, s.run_id, *secret, deadline, client_tls);
      if (via.ok()) {
        reply = std::move(via);
        s.chief_via = route->via;
      }
    }
  }
  if (!reply.ok()) {
    s.chief_error = std::string(Message(reply.status()));
    return s;
  }
  s.from_chief = true;
  s.global_step = reply->global_step;
  s.chief_state = reply->state;
  s.eval_metrics = reply->eval_metrics;
  for (const CoordinatorTask& t : reply->tasks) {
    for (TaskStatusRow& row : s.tasks) {
      // A reserved slot not started: the chief has not heard from it.
      if (row.task != t.task ||
          row.state == TaskStateName(TaskState::kReserved)) {
        continue;
      }
      if (!t.state.empty() && row.alive) row.state = t.state;
      row.step = t.step;
      row.loss = t.loss;
      row.examples_per_sec = t.examples_per_sec;
      row.seconds_since_heartbeat = t.seconds_since_heartbeat;
      if (t.rss_bytes > 0) row.rss_bytes = t.rss_bytes;
      row.restarts = std::max(row.restarts.value_or(0), t.restarts);
    }
  }
  return s;
}

std::string RunStatusToJson(const RunStatus& s) {
  Json j;
  j["run_id"] = s.run_id;
  j["run_dir"] = s.run_dir;
  j["state"] = std::string(RunStateName(s.state));
  j["exit_code"] = OrNull(s.exit_code);
  j["message"] = s.message;
  j["started_ms"] = s.started_ms;
  j["ended_ms"] = OrNull(s.ended_ms);
  j["detached"] = s.detached;
  j["source"] = s.from_chief ? "chief" : "processes";
  Json metrics = Json::object();
  for (const auto& [name, value] : s.eval_metrics) metrics[name] = value;
  j["chief"] =
      Json{{"task", s.chief},
           {"address", s.chief_address},
           {"reachable", s.from_chief},
           {"error", s.chief_error},
           {"via", s.chief_via},
           {"global_step", s.from_chief ? Json(s.global_step) : Json(nullptr)},
           {"state", s.chief_state},
           {"eval_metrics", metrics}};
  Json tasks = Json::array();
  for (const TaskStatusRow& t : s.tasks) {
    tasks.push_back(
        Json{{"task", t.task},
             {"state", t.state},
             {"address", t.address},
             {"pid", t.pid},
             {"alive", t.alive},
             {"exit_code", OrNull(t.exit_code)},
             {"step", OrNull(t.step)},
             {"loss", OrNull(t.loss)},
             {"examples_per_sec", OrNull(t.examples_per_sec)},
             {"seconds_since_heartbeat", OrNull(t.seconds_since_heartbeat)},
             {"rss_bytes", OrNull(t.rss_bytes)},
             {"restarts", OrNull(t.restarts)}});
  }
  j["tasks"] = std::move(tasks);
  Json checkpoints = Json::array();
  for (const CheckpointRow& c : s.checkpoints) {
    checkpoints.push_back(Json{{"path", c.path},
                               {"step", c.step},
                               {"resumable", c.problem.empty()},
                               {"problem", c.problem}});
  }
  j["checkpoint_dir"] = s.checkpoint_dir;
  j["checkpoints"] = std::move(checkpoints);
  return JsonText(j);
}

std::string RunStatusToText(const RunStatus& s, int64_t now_ms) {
  std::string out = StrCat("run ", s.run_id, ": ", RunStateName(s.state));
  if (s.exit_code) StrAppend(&out, " (exit code ", *s.exit_code, ")");
  StrAppend(&out, s.detached ? ", detached" : "", "; started ",
            LocalTime(s.started_ms));
  if (s.ended_ms) {
    StrAppend(&out, ", ended ", LocalTime(*s.ended_ms), " after ",
              Duration(*s.ended_ms - s.started_ms));
  } else {
    StrAppend(&out, ", ", Duration(now_ms - s.started_ms), " ago");
  }
  out += "\n";
  if (!s.message.empty()) StrAppend(&out, s.message, "\n");
  if (s.from_chief) {
    StrAppend(
        &out, "chief ", s.chief, " at ", s.chief_address,
        s.chief_via.empty() ? "" : StrCat(" (through an ", s.chief_via, ")"),
        ": global step ", s.global_step, s.chief_state.empty() ? "" : ", ",
        s.chief_state);
    for (const auto& [name, value] : s.eval_metrics) {
      StrAppend(&out, ", ", name, " ", fmt::format("{:.4f}", value));
    }
    out += "\n";
  } else if (!s.chief_error.empty()) {
    StrAppend(&out, "chief unreachable (", s.chief_error,
              "); states from process liveness in tasks.json\n");
  }
  std::vector<std::vector<std::string>> rows = {
      {"TASK", "STATE", "ADDRESS", "STEP", "LOSS", "EXAMPLES/S", "MEMORY",
       "HEARTBEAT", "RESTARTS"}};
  for (const TaskStatusRow& t : s.tasks) {
    std::string state = t.state;
    const std::optional<TaskState> recorded = ParseTaskState(t.state);
    if (t.exit_code && recorded && IsFinal(*recorded)) {
      StrAppend(&state, " (", *t.exit_code, ")");
    }
    rows.push_back(
        {t.task, state, t.address, t.step ? StrCat(*t.step) : "-",
         t.loss ? fmt::format("{:.4f}", *t.loss) : "-",
         t.examples_per_sec ? fmt::format("{:.0f}", *t.examples_per_sec) : "-",
         t.rss_bytes ? HumanBytes(*t.rss_bytes) : "-",
         t.seconds_since_heartbeat
             ? fmt::format("{:.1f}s ago", *t.seconds_since_heartbeat)
             : "-",
         t.restarts ? StrCat(*t.restarts) : "-"});
  }
  std::vector<size_t> widths(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) {
      widths[c] = std::max(widths[c], row[c].size());
    }
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      StrAppend(&line, c ? "  " : "",
                c + 1 < row.size() ? PadRight(row[c], widths[c]) : row[c]);
    }
    StrAppend(&out, line, "\n");
  }
  if (!s.checkpoint_dir.empty()) {
    if (s.checkpoints.empty()) {
      StrAppend(&out, "no checkpoint of this run in ", s.checkpoint_dir, "\n");
    } else {
      StrAppend(&out,
                "checkpoints of this run (newest first; dtf launch "
                "--resume continues from the newest):\n");
      for (const CheckpointRow& c : s.checkpoints) {
        StrAppend(&out, "  step ", c.step, "  ", c.path,
                  c.problem.empty() ? "" : StrCat("  (", c.problem, ")"), "\n");
      }
    }
  }
  return out;
}

}  // namespace dtf::launch
