// dtf scale: start worker slots a running run reserved (max_workers).
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "cmd/app.h"
#include "cmd/cli_output.h"
#include "cmd/flags.h"
#include "cmd/run_common.h"
#include "lib/base/strings.h"
#include "lib/launch/hand_off.h"
#include "lib/launch/run_control.h"
#include "lib/launch/run_registry.h"
#include "lib/launch/run_scale.h"

namespace dtf::cli {
namespace {

struct ScaleFlags {
  RunsFlags runs;
  std::string run;
  int workers = 0;
  double wait = 60;
};

// The run's workers below `workers` that have written their ready file.
int ReadyWorkers(const launch::RunView& run, int workers) {
  int ready = 0;
  for (size_t i = 0; i < run.plan.tasks.size() && i < run.record.tasks.size();
       ++i) {
    const launch::TaskPlan& t = run.plan.tasks[i];
    if (t.role == Role::kWorker && t.index < workers &&
        run.record.tasks[i].state == launch::TaskState::kRunning) {
      ++ready;
    }
  }
  return ready;
}

Status RunScale(const ScaleFlags& f) {
  DTF_ASSIGN_OR_RETURN(const std::string dir, FindRun(f.runs, f.run));
  // A run handed to its engine (Kubernetes) is scaled there.
  if (std::optional<StatusOr<std::string>> scaled =
          launch::ScaleHandedOffRun(dir, f.workers)) {
    DTF_RETURN_IF_ERROR(scaled->status());
    return PrintStdout(**scaled);
  }
  DTF_ASSIGN_OR_RETURN(launch::RunView run, launch::LoadRun(dir));
  if (launch::IsFinal(run.record.state) ||
      !launch::SupervisorRunning(run.record)) {
    return FailedPreconditionError(
        StrCat("run ", run.record.run_id, " is not running (",
               launch::RunStateName(run.record.state), ")"));
  }
  const int started = launch::StartedWorkers(run.plan, run.record);
  DTF_RETURN_IF_ERROR(launch::CheckScale(run.plan, started, f.workers));
  if (f.workers == started) {
    return PrintStdout(StrCat("run ", run.record.run_id, " already has ",
                              started, " workers\n"));
  }
  DTF_RETURN_IF_ERROR(launch::WriteScaleRequest(dir, f.workers));
  // The supervisor starts the slots at its next look; each new worker is
  // ready once it serves.
  using Clock = std::chrono::steady_clock;
  const auto until =
      Clock::now() + std::chrono::milliseconds(int64_t(f.wait * 1000));
  for (;;) {
    DTF_ASSIGN_OR_RETURN(run, launch::LoadRun(dir));
    const int ready = ReadyWorkers(run, f.workers);
    if (ready >= f.workers) break;
    if (launch::IsFinal(run.record.state)) {
      return FailedPreconditionError(
          StrCat("run ", run.record.run_id, " ended (",
                 launch::RunStateName(run.record.state), ") before its ",
                 f.workers, " workers were running"));
    }
    if (Clock::now() >= until) {
      return DeadlineExceededError(StrCat(
          "run ", run.record.run_id, ": ", ready, " of ", f.workers,
          " workers running after ", f.wait, " s (--wait); see dtf status ",
          run.record.run_id, " and ", dir, "/supervisor.log"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::string names;
  for (const launch::TaskPlan& t : run.plan.tasks) {
    if (t.role == Role::kWorker && t.index >= started && t.index < f.workers) {
      StrAppend(&names, names.empty() ? "" : ", ", t.name());
    }
  }
  return PrintStdout(StrCat("run ", run.record.run_id, ": started ", names,
                            "; ", f.workers, " of ", run.plan.workers,
                            " worker slots running\n"));
}

}  // namespace

void SetupScale(CLI::App* app, Context* ctx) {
  auto f = std::make_shared<ScaleFlags>();
  CLI::App* sub = app->add_subcommand(
      "scale",
      "Start worker slots a running parameter-server run reserved (the "
      "profile's max_workers): each new worker joins at the next step with "
      "the current model and a share of the input left");
  sub->add_option("run", f->run,
                  "The run id, or a unique prefix (default: the latest run)");
  sub->add_option("--workers", f->workers,
                  "The workers the run is to have, up to its max_workers")
      ->required()
      ->check(NumberBetween(1, 10000));
  AddRunsFlags(sub, &f->runs);
  sub->add_option("--wait", f->wait,
                  "Seconds to wait for the new workers to serve (default 60)")
      ->check(NumberBetween(0, 3600));
  sub->callback([f, ctx] { ctx->status = RunScale(*f); });
}

}  // namespace dtf::cli
