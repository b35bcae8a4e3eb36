// dtf logs: a run's task output, one task's or all of them prefixed, and
// followed as it grows with -f. What the tasks wrote, to their stdout or
// their stderr, goes to stdout (so that `dtf logs | grep loss` finds it);
// dtf's own messages go to stderr.
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cmd/app.h"
#include "cmd/cli_output.h"
#include "cmd/run_common.h"
#include "lib/base/strings.h"
#include "lib/data/json.h"
#include "lib/launch/backend.h"
#include "lib/launch/hand_off.h"
#include "lib/launch/log_tail.h"
#include "lib/launch/plan_hooks.h"
#include "lib/launch/run_control.h"
#include "lib/launch/run_registry.h"

namespace dtf::cli {
namespace {

struct LogsFlags {
  RunsFlags runs;
  std::vector<std::string> args;  // [RUN] [TASK]
  bool follow = false;
  bool json = false;
};

struct Source {
  std::string task;  // as lines are prefixed: "worker:1", "10.0.0.2 worker:1"
  std::string name;  // "worker:1"
  std::string host;  // an SSH run's task's host; "" for a local run
  bool is_stdout = true;
  std::unique_ptr<launch::LineTail> tail;
};

// {"task": "worker:1", "stream": "stderr", "line": "..."} and a newline;
// for an SSH run "host" too, after "task".
std::string LogLineJson(const Source& source, std::string_view line) {
  std::string out = "{\"task\": ";
  AppendJsonString(source.name, &out);
  if (!source.host.empty()) {
    out += ", \"host\": ";
    AppendJsonString(source.host, &out);
  }
  StrAppend(&out, ", \"stream\": \"", source.is_stdout ? "stdout" : "stderr",
            "\", \"line\": ");
  AppendJsonString(line, &out);
  out += "}\n";
  return out;
}

// Whether the run has ended: recorded so, or nobody left to record it.
bool RunOver(const std::string& dir) {
  StatusOr<launch::RunView> run = launch::LoadRun(dir);
  if (!run.ok()) return true;
  if (launch::IsFinal(run->record.state)) return true;
  return !launch::SupervisorRunning(run->record) && !launch::AnyTaskAlive(*run);
}

Status RunLogs(const LogsFlags& f, Context* ctx) {
  std::string run_id, task;
  for (const std::string& a : f.args) {
    if (IsTaskName(a) && task.empty()) {
      task = a;
    } else if (run_id.empty() && !IsTaskName(a)) {
      run_id = a;
    } else {
      return InvalidArgumentError(
          StrCat("dtf logs takes [RUN] [TASK]; cannot place \"", a, "\""));
    }
  }
  DTF_ASSIGN_OR_RETURN(const std::string dir, FindRun(f.runs, run_id));
  if (auto engine = launch::QueryHandedOffRun(
          dir, f.follow ? launch::EngineQuery::kLogsFollow
                        : launch::EngineQuery::kLogs)) {
    return *engine;
  }
  DTF_ASSIGN_OR_RETURN(const launch::RunView run, launch::LoadRun(dir));
  std::vector<std::string> names;
  std::vector<std::string> labels;
  for (const launch::TaskPlan& t : run.plan.tasks) {
    names.push_back(t.name());
    labels.push_back(run.plan.hooks().TaskLabel(t));
  }
  std::vector<Source> sources;
  // Where the logs are: here, or on the tasks' hosts (one connection per
  // host).
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<launch::RunSource> from,
                       launch::OpenRunSource(run.plan));
  const bool remote = run.plan.hooks().FilesOnHosts();
  for (const launch::TaskPlan& t : run.plan.tasks) {
    if (!task.empty() && t.name() != task) continue;
    const std::string host = remote ? t.host : std::string();
    DTF_ASSIGN_OR_RETURN(std::unique_ptr<launch::LineTail> out,
                         from->Follow(t, t.stdout_file));
    DTF_ASSIGN_OR_RETURN(std::unique_ptr<launch::LineTail> err,
                         from->Follow(t, t.stderr_file));
    sources.push_back(
        {run.plan.hooks().TaskLabel(t), t.name(), host, true, std::move(out)});
    sources.push_back(
        {run.plan.hooks().TaskLabel(t), t.name(), host, false, std::move(err)});
  }
  if (sources.empty()) {
    return NotFoundError(StrCat("run ", run.plan.run_id, " has no task ", task,
                                " (it has ", names.front(), " to ",
                                names.back(), ")"));
  }
  // One task's output as it is; all tasks' prefixed; with --json one
  // object a line.
  const bool prefixed = task.empty();
  const TaskPrefixes prefixes(labels, ColorFor(STDOUT_FILENO));
  auto pump = [&](bool flush) -> Status {
    for (Source& s : sources) {
      const std::string prefix =
          prefixed && !f.json ? prefixes.For(s.task) : std::string();
      s.tail->Poll(
          [&](std::string_view line) {
            const std::string text =
                f.json ? LogLineJson(s, line) : StrCat(prefix, line, "\n");
            std::fwrite(text.data(), 1, text.size(), stdout);
          },
          flush);
      DTF_RETURN_IF_ERROR(FlushStdout());
    }
    return OkStatus();
  };
  if (!f.follow) return pump(true);
  for (;;) {
    DTF_RETURN_IF_ERROR(pump(false));
    if (ctx->cancel != nullptr && ctx->cancel->load()) break;
    if (RunOver(dir)) break;
    for (int i = 0; i < 4; ++i) {
      if (ctx->cancel != nullptr && ctx->cancel->load()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  return pump(true);
}

}  // namespace

void SetupLogs(CLI::App* app, Context* ctx) {
  auto f = std::make_shared<LogsFlags>();
  CLI::App* sub = app->add_subcommand(
      "logs",
      "Print a run's task output: one task's (worker:1), or every task's "
      "prefixed with its name");
  sub->add_option("run_and_task", f->args,
                  "[RUN] [TASK]: the run id or a unique prefix (default: the "
                  "latest run) and the task, ps:N or worker:N (default: all)")
      ->expected(0, 2);
  AddRunsFlags(sub, &f->runs);
  sub->add_flag("-f,--follow", f->follow,
                "Keep printing what the tasks write until the run ends or "
                "Ctrl-C");
  sub->add_flag("--json", f->json,
                "One JSON object a line: {\"task\": \"worker:1\", \"stream\": "
                "\"stdout\" or \"stderr\", \"line\": \"...\"}");
  sub->callback([f, ctx] { ctx->status = RunLogs(*f, ctx); });
}

}  // namespace dtf::cli
