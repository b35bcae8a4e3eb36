// dtf logs: a run's task output, one task's or all of them prefixed, and
// followed as it grows with -f.
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
#include "cmd/run_common.h"
#include "lib/base/strings.h"
#include "lib/launch/log_tail.h"
#include "lib/launch/run_control.h"
#include "lib/launch/run_registry.h"
#include "lib/launch/ssh_backend.h"

namespace dtf::cli {
namespace {

struct LogsFlags {
  RunsFlags runs;
  std::vector<std::string> args;  // [RUN] [TASK]
  bool follow = false;
};

struct Source {
  std::string task;
  bool is_stdout = true;
  std::unique_ptr<launch::LineTail> tail;
};

// Whether the run has ended: recorded so, or nobody left to record it.
bool RunOver(const std::string& dir) {
  StatusOr<launch::RunView> run = launch::LoadRun(dir);
  if (!run.ok()) return true;
  if (launch::RunStateFinal(run->record.state)) return true;
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
  DTF_ASSIGN_OR_RETURN(const launch::RunView run, launch::LoadRun(dir));
  std::vector<std::string> names;
  std::vector<std::string> labels;
  for (const launch::TaskPlan& t : run.plan.tasks) {
    names.push_back(t.name());
    labels.push_back(TaskLabel(t, run.plan.remote()));
  }
  std::vector<Source> sources;
  // An SSH run's logs are on its hosts: one connection per host.
  std::map<std::string, std::unique_ptr<launch::RemoteHost>> hosts;
  for (const launch::TaskPlan& t : run.plan.tasks) {
    if (!task.empty() && t.name() != task) continue;
    if (!run.plan.remote()) {
      sources.push_back({TaskLabel(t, false), true,
                         std::make_unique<launch::LineTail>(t.stdout_file)});
      sources.push_back({TaskLabel(t, false), false,
                         std::make_unique<launch::LineTail>(t.stderr_file)});
      continue;
    }
    std::unique_ptr<launch::RemoteHost>& host = hosts[t.host];
    if (host == nullptr) {
      DTF_ASSIGN_OR_RETURN(host, launch::ConnectTaskHost(run.plan, t));
    }
    sources.push_back({TaskLabel(t, true), true,
                       launch::RemoteTail(host.get(), t.stdout_file)});
    sources.push_back({TaskLabel(t, true), false,
                       launch::RemoteTail(host.get(), t.stderr_file)});
  }
  if (sources.empty()) {
    return NotFoundError(StrCat("run ", run.plan.run_id, " has no task ", task,
                                " (it has ", names.front(), " to ",
                                names.back(), ")"));
  }
  // One task's output as it is; all tasks' prefixed.
  const bool prefixed = task.empty();
  const TaskPrefixes out_prefixes(labels, ColorFor(STDOUT_FILENO));
  const TaskPrefixes err_prefixes(labels, ColorFor(STDERR_FILENO));
  auto pump = [&](bool flush) {
    for (Source& s : sources) {
      std::FILE* to = s.is_stdout ? stdout : stderr;
      const std::string prefix = !prefixed     ? std::string()
                                 : s.is_stdout ? out_prefixes.For(s.task)
                                               : err_prefixes.For(s.task);
      s.tail->Poll(
          [&](std::string_view line) {
            const std::string text = StrCat(prefix, line, "\n");
            std::fwrite(text.data(), 1, text.size(), to);
          },
          flush);
      std::fflush(to);
    }
  };
  if (!f.follow) {
    pump(true);
    if (std::ferror(stdout)) return ErrnoToStatus(EIO, "<stdout>");
    return OkStatus();
  }
  for (;;) {
    pump(false);
    if (ctx->cancel != nullptr && ctx->cancel->load()) break;
    if (RunOver(dir)) break;
    for (int i = 0; i < 4; ++i) {
      if (ctx->cancel != nullptr && ctx->cancel->load()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  pump(true);
  return OkStatus();
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
  sub->callback([f, ctx] { ctx->status = RunLogs(*f, ctx); });
}

}  // namespace dtf::cli
