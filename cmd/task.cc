// dtf task: what the SSH backend runs on a task's host. `exec` starts a
// task detached from the SSH session with a monitor that records its exit;
// `signal` stops it by its recorded process group.
#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cmd/app.h"
#include "cmd/cli_output.h"
#include "lib/base/strings.h"
#include "lib/launch/task_exec.h"

namespace dtf::cli {
namespace {

struct TaskFlags {
  launch::TaskExecOptions exec;
  std::string signal = "TERM";
};

Status RunTaskExec(const TaskFlags& f) {
  DTF_ASSIGN_OR_RETURN(const launch::ProcessId id,
                       launch::StartMonitoredTask(f.exec));
  return PrintStdout(StrCat(id.pid, " ", id.start_ticks, "\n"));
}

Status RunTaskSignal(const TaskFlags& f) {
  const int signal = f.signal == "KILL" ? SIGKILL : SIGTERM;
  DTF_ASSIGN_OR_RETURN(const bool signalled,
                       launch::SignalTask(f.exec.dir, signal));
  return PrintStdout(signalled ? "signalled\n" : "gone\n");
}

}  // namespace

void SetupTask(CLI::App* app, Context* ctx) {
  auto f = std::make_shared<TaskFlags>();
  CLI::App* sub = app->add_subcommand(
      "task",
      "Start or signal one task of a run on this host (what dtf launch runs "
      "over SSH)");
  sub->require_subcommand(1);

  CLI::App* exec = sub->add_subcommand(
      "exec",
      "Start COMMAND detached, in its own session, output to DIR/stdout and "
      "DIR/stderr, its pid in DIR/pid and its exit in DIR/exit.json; print "
      "its pid");
  exec->add_option("--task", f->exec.task, "The task's name (worker:1)")
      ->required();
  exec->add_option("--dir", f->exec.dir, "The task's directory")->required();
  exec->add_option("--env-file", f->exec.env_file,
                   "Environment for the task: NAME=VALUE entries, each ended "
                   "by a NUL byte");
  exec->add_flag("--append", f->exec.append,
                 "Append to DIR/stdout and DIR/stderr");
  exec->add_option("command", f->exec.argv,
                   "The program (an absolute path) and its arguments, after "
                   "--")
      ->required();
  exec->callback([f, ctx] { ctx->status = RunTaskExec(*f); });

  CLI::App* signal = sub->add_subcommand(
      "signal",
      "Signal the process group of the task recorded in DIR/pid (never a "
      "recycled pid), marking it stopped; print signalled or gone");
  signal->add_option("--dir", f->exec.dir, "The task's directory")->required();
  signal->add_option("--signal", f->signal, "TERM or KILL (default TERM)")
      ->check(CLI::IsMember({"TERM", "KILL"}));
  signal->callback([f, ctx] { ctx->status = RunTaskSignal(*f); });
}

}  // namespace dtf::cli
