// dtf launch: start a run of the job (parameter servers and workers, each a
// `dtf serve` process) as the profile says, or print its plan.
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cmd/app.h"
#include "cmd/cli_output.h"
#include "cmd/flags.h"
#include "cmd/remote_preflight.h"
#include "cmd/run_checkpoints.h"
#include "cmd/run_common.h"
#include "cmd/task_storage.h"
#include "lib/base/storage.h"
#include "lib/base/strings.h"
#include "lib/base/task_name.h"
#include "lib/launch/backend_kind.h"
#include "lib/launch/hand_off.h"
#include "lib/launch/plan.h"
#include "lib/launch/plan_hooks.h"
#include "lib/launch/run_registry.h"
#include "lib/launch/run_status.h"
#include "lib/launch/supervisor.h"

namespace dtf::cli {
namespace {

struct LaunchFlags {
  RunsFlags runs;
  ProfileFlags profile;
  std::vector<std::string> sets;
  std::string metrics_out;
  bool dry_run = false;
  std::string render;  // backend = "kubernetes": --render DIR
  bool json = false;
  bool detach = false;
  std::string task_binary;
  double grace = 10;
  double start_timeout = 120;
  double deadline = 0;
  bool accept_new_host_keys = false;
  // --resume [RUN]: resume is set, resume_run "" for the latest run.
  bool resume = false;
  std::string resume_run;
};

std::chrono::milliseconds Millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

// The request that plans run `f.resume_run` (the latest by default) again,
// as it was launched: its job, profile, task counts, --set values and
// --metrics-out, with its run id, every task restoring its last
// checkpoint. Refused (naming the run) when the run cannot be resumed
// (CheckResumable) or when its profile now gives another plan.
StatusOr<launch::PlanRequest> ResumeRequest(const LaunchFlags& f) {
  DTF_ASSIGN_OR_RETURN(const std::string dir, FindRun(f.runs, f.resume_run));
  DTF_ASSIGN_OR_RETURN(const launch::RunView view, launch::LoadRun(dir));
  const launch::Plan& was = view.plan;
  DTF_ASSIGN_OR_RETURN(
      const launch::RunStatus status,
      launch::CollectRunStatus(dir, std::chrono::milliseconds(2000)));
  RunsFlags runs;
  runs.job = was.job;
  runs.runs_dir = std::filesystem::path(was.run_dir).parent_path().string();
  ProfileFlags profile;
  profile.profile = was.profile_source == launch::kBuiltInProfileSource
                        ? std::string("local")
                        : was.profile_source;
  // --ps with --resume: another number of parameter servers, each
  // restoring its part of the run's checkpoint (a sharded checkpoint or
  // checkpoint.dtf restores into any number of them).
  const bool reshard = f.profile.ps > 0 && f.profile.ps != was.ps;
  if (reshard && was.ps == 0) {
    return FailedPreconditionError(
        StrCat("run ", was.run_id,
               " has no parameter servers; --ps cannot be given to resume it"));
  }
  profile.ps = reshard ? f.profile.ps : was.ps;
  profile.workers = was.workers;
  DTF_ASSIGN_OR_RETURN(launch::PlanRequest r,
                       PlanRequestFor(runs, profile, was.sets));
  // Checkpoints in a bucket are read with the settings the tasks get.
  DTF_RETURN_IF_ERROR(PrepareTaskStorage(&r));
  DTF_ASSIGN_OR_RETURN(const JobFile job, LoadRunJob(was));
  DTF_RETURN_IF_ERROR(CheckResumable(status, was, job));
  r.binary = was.binary;
  r.overrides.metrics_out = was.metrics_out;
  r.run_id = was.run_id;
  r.resume = true;
  // The same tasks on the same hosts, or the plan is not the run's.
  launch::PlanRequest draft_request = r;
  draft_request.ports.clear();
  DTF_ASSIGN_OR_RETURN(const launch::Plan now, launch::MakePlan(draft_request));
  // With another PS count, the same workers on the same hosts.
  const auto kept = [&](const launch::Plan& plan) {
    std::vector<std::pair<std::string, std::string>> tasks;
    for (const auto& t : plan.tasks) {
      if (reshard && t.role == Role::kPs) continue;
      tasks.emplace_back(t.name(), t.host);
    }
    return tasks;
  };
  const bool same = now.backend == was.backend && kept(now) == kept(was);
  if (!same) {
    return FailedPreconditionError(StrCat(
        "run ", was.run_id, ": its profile (", was.profile_source,
        ") now plans other tasks or hosts than the run had; resume needs the "
        "same plan (start a new run instead)"));
  }
  return r;
}

StatusOr<launch::PlanRequest> MakeRequest(const LaunchFlags& f) {
  if (f.resume) return ResumeRequest(f);
  DTF_ASSIGN_OR_RETURN(launch::PlanRequest r,
                       PlanRequestFor(f.runs, f.profile, f.sets));
  if (!f.task_binary.empty()) r.binary = AbsolutePath(f.task_binary);
  if (!f.metrics_out.empty()) {
    r.overrides.metrics_out = IsRemotePath(f.metrics_out)
                                  ? f.metrics_out
                                  : AbsolutePath(f.metrics_out);
  }
  return r;
}

// The directory of the run --resume names; --ps with it is refused for a
// run handed to an engine.
StatusOr<std::string> ResumeDir(const LaunchFlags& f) {
  DTF_ASSIGN_OR_RETURN(const std::string dir, FindRun(f.runs, f.resume_run));
  if (f.profile.ps > 0 && launch::IsHandedOffRun(dir)) {
    return InvalidArgumentError(
        "--ps with --resume: not for a run handed to an engine (its "
        "recorded objects are applied again as they were)");
  }
  return dir;
}

// The run of `request` handed to its backend's engine (Kubernetes), or what
// would be handed printed or written.
Status HandOff(const LaunchFlags& f, const launch::PlanRequest& request,
               const Console& console) {
  if (f.json || f.detach || !f.metrics_out.empty()) {
    return InvalidArgumentError(StrCat(
        f.json     ? "--json"
        : f.detach ? "--detach"
                   : "--metrics-out",
        ": not for backend = \"", launch::BackendName(request.profile.backend),
        "\" (a dry run prints the manifests as YAML; an applied run is the "
        "cluster's, followed with dtf status, logs and stop; the chief "
        "writes its metrics beside its output)"));
  }
  launch::HandOffOptions how;
  how.dry_run = f.dry_run;
  how.render_dir = f.render;
  how.on_warning = [&](std::string_view text) { console.Warning(text); };
  how.on_info = [&](std::string_view text) { console.Info(text); };
  // The engine starts the tasks: the data is checked from here.
  if (!f.dry_run && f.render.empty()) {
    DTF_RETURN_IF_ERROR(CheckRemoteData(request.job, request.overrides.sets));
  }
  DTF_ASSIGN_OR_RETURN(const std::string out, launch::HandOffRun(request, how));
  return PrintStdout(out);
}

Status RunLaunch(const LaunchFlags& f, Context* ctx) {
  const Console& console = ctx->console;
  if (f.resume) {
    // A run handed to an engine (Kubernetes) is handed to it again.
    DTF_ASSIGN_OR_RETURN(const std::string dir, ResumeDir(f));
    launch::HandOffOptions how;
    how.dry_run = f.dry_run;
    how.on_warning = [&](std::string_view text) { console.Warning(text); };
    how.on_info = [&](std::string_view text) { console.Info(text); };
    if (auto resumed = launch::ResumeHandedOffRun(dir, how)) {
      if (f.json || f.detach || !f.render.empty()) {
        return InvalidArgumentError(StrCat(
            f.json     ? "--json"
            : f.detach ? "--detach"
                       : "--render",
            " with --resume: not for a Kubernetes run (its recorded objects "
            "are applied again; --dry-run prints the kubectl commands)"));
      }
      DTF_ASSIGN_OR_RETURN(const std::string out, *std::move(resumed));
      return PrintStdout(out);
    }
  }
  DTF_ASSIGN_OR_RETURN(launch::PlanRequest request, MakeRequest(f));
  // The tasks' S3 settings and credentials, which this launcher uses too.
  DTF_RETURN_IF_ERROR(PrepareTaskStorage(&request));
  if (launch::PlanHooksOf(request.profile.backend).HandsOff()) {
    return HandOff(f, request, console);
  }
  if (!f.render.empty()) {
    return InvalidArgumentError(
        StrCat("--render: only for backend = \"kubernetes\" profiles; ",
               request.profile.source, " has backend = \"",
               launch::BackendName(request.profile.backend), "\""));
  }
  if (f.dry_run) {
    DTF_ASSIGN_OR_RETURN(const launch::Plan plan, launch::MakePlan(request));
    return PrintStdout(f.json ? launch::PlanToJson(plan)
                              : launch::PlanToText(plan));
  }
  // Data or output in a bucket: readable from here before any task starts.
  DTF_RETURN_IF_ERROR(CheckRemoteData(request.job, request.overrides.sets));
  std::vector<std::string> names;
  const launch::PlanHooks& hooks = launch::PlanHooksOf(request.profile.backend);
  {
    DTF_ASSIGN_OR_RETURN(const launch::Plan draft, launch::MakePlan(request));
    const std::string warning =
        launch::PlaintextWarning(draft, request.profile);
    if (!warning.empty()) console.Warning(warning);
    for (const launch::TaskPlan& t : draft.tasks) {
      names.push_back(hooks.TaskLabel(t));
    }
  }
  launch::RunOptions options;
  options.grace = Millis(f.grace);
  options.start_timeout = Millis(f.start_timeout);
  options.deadline = Millis(f.deadline);
  options.ssh.accept_new_host_keys = f.accept_new_host_keys;
  options.ssh.search_path = SearchPathFromEnv();
  options.ssh.on_preflight = [&](std::string_view table) {
    console.Info(StrCat("dtf: preflight\n", table));
  };
  if (f.detach) {
    DTF_ASSIGN_OR_RETURN(const std::string id,
                         launch::StartDetached(std::move(request), options));
    console.Info(StrCat("dtf: run ", id,
                        " started in the background; follow it with "
                        "'dtf status ",
                        id, "', 'dtf logs ", id, " -f', end it with 'dtf stop ",
                        id, "'"));
    return PrintStdout(StrCat(id, "\n"));
  }
  const TaskPrefixes out_prefixes(names, ColorFor(STDOUT_FILENO));
  const TaskPrefixes err_prefixes(names, ColorFor(STDERR_FILENO));
  options.cancel = ctx->cancel;
  options.on_output = [&](const launch::TaskPlan& task, launch::Stream stream,
                          std::string_view line) {
    const bool is_out = stream == launch::Stream::kStdout;
    const std::string text =
        StrCat(is_out ? out_prefixes.For(hooks.TaskLabel(task))
                      : err_prefixes.For(hooks.TaskLabel(task)),
               line, "\n");
    std::FILE* to = is_out ? stdout : stderr;
    std::fwrite(text.data(), 1, text.size(), to);
    std::fflush(to);
  };
  options.on_note = [&](std::string_view note) {
    console.Info(StrCat("dtf: ", note));
  };
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<launch::Run> run,
                       launch::StartRun(std::move(request), options));
  console.Info(StrCat("dtf: run ", run->run_id(), " (", run->plan().run_dir,
                      "); Ctrl-C stops it"));
  const launch::RunOutcome outcome = run->Wait();
  if (outcome.status.ok()) {
    console.Info(StrCat("dtf: run ", run->run_id(), " succeeded"));
  }
  if (outcome.exit_code && *outcome.exit_code != 0 &&
      outcome.status.code() != StatusCode::kCancelled) {
    ctx->exit_code = *outcome.exit_code;
  }
  return outcome.status;
}

}  // namespace

void SetupLaunch(CLI::App* app, Context* ctx) {
  auto f = std::make_shared<LaunchFlags>();
  CLI::App* sub = app->add_subcommand(
      "launch",
      "Start the job's parameter servers and workers as the profile says "
      "(every task on this machine with the local profile), or print the "
      "plan");
  AddRunsFlags(sub, &f->runs);
  AddProfileFlags(sub, &f->profile);
  sub->add_option("--set", f->sets,
                  "section.key=value passed to every task (repeatable)")
      ->allow_extra_args(false);
  sub->add_option("--metrics-out", f->metrics_out,
                  "Have the chief write the final metrics as JSON to this "
                  "file");
  auto* dry_run = sub->add_flag(
      "--dry-run", f->dry_run,
      "Print the plan (tasks, ports, command lines, environment) and start "
      "nothing");
  sub->add_flag("--json", f->json, "With --dry-run: the plan as JSON")
      ->needs(dry_run);
  sub->add_option("--render", f->render,
                  "Kubernetes profiles: write the run's manifests into DIR "
                  "and start nothing")
      ->type_name("DIR")
      ->excludes(dry_run);
  sub->add_flag("--detach", f->detach,
                "Start the run in the background, print its id and return")
      ->excludes(dry_run);
  sub->add_flag("--accept-new-host-keys", f->accept_new_host_keys,
                "SSH profiles: record the host key of a host known_hosts does "
                "not have yet (first contact); a changed key still stops the "
                "launch");
  CLI::Option* resume =
      sub->add_option("--resume", f->resume_run,
                      "Continue a failed or stopped run (the latest, or RUN) "
                      "from its last checkpoint, with the plan it was launched "
                      "with (with --ps, on another number of parameter "
                      "servers)")
          ->expected(0, 1)
          ->type_name("RUN")
          ->excludes("--set")
          ->excludes("--metrics-out")
          ->excludes("--profile")
          ->excludes("--workers");
  sub->add_option("--task-binary", f->task_binary,
                  "Run this program for every task instead of this dtf "
                  "(it gets the same arguments, 'serve ...')");
  sub->add_option("--grace", f->grace,
                  "Seconds tasks get to exit after SIGTERM (or after the "
                  "chief exits) before they are killed (default 10)")
      ->check(NumberBetween(0, 3600));
  sub->add_option("--start-timeout", f->start_timeout,
                  "Seconds each task gets to start serving (default 120)")
      ->check(NumberBetween(0.1, 86400));
  sub->add_option("--deadline", f->deadline,
                  "Seconds the whole run may take: then every task is "
                  "stopped (the chief writes its checkpoint) and the launch "
                  "fails (default 0: none)")
      ->check(NumberBetween(0, 31536000));
  sub->callback([f, ctx, resume] {
    f->resume = resume->count() > 0;
    ctx->status = RunLaunch(*f, ctx);
  });
}

}  // namespace dtf::cli
