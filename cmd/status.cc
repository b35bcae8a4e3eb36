// dtf status: how a run goes, from its chief (Coordinator.Status) or, when
// that does not answer, from its processes.
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "cmd/app.h"
#include "cmd/cli_output.h"
#include "cmd/run_checkpoints.h"
#include "cmd/run_common.h"
#include "cmd/task_storage.h"
#include "lib/base/storage.h"
#include "lib/base/strings.h"
#include "lib/launch/hand_off.h"
#include "lib/launch/plan_hooks.h"
#include "lib/launch/run_registry.h"
#include "lib/launch/run_status.h"

namespace dtf::cli {
namespace {

struct StatusFlags {
  RunsFlags runs;
  std::string run;
  bool json = false;
  bool watch = false;
};

constexpr auto kRpcDeadline = std::chrono::seconds(2);

// The generations the run can resume from, for a run whose job still
// loads and whose output_dir is here or in a bucket (an SSH run's local
// one is on its chief's host). A bucket is read with the run's own S3
// settings and credentials, when it has them.
void AddCheckpoints(const std::string& dir, launch::RunStatus* status) {
  StatusOr<launch::RunView> view = launch::LoadRun(dir);
  if (!view.ok()) return;
  StatusOr<JobFile> job = LoadRunJob(view->plan);
  if (!job.ok()) return;
  const bool remote = IsRemotePath(job->train.output_dir);
  if (view->plan.hooks().FilesOnHosts() && !remote) return;
  if (remote && !view->plan.s3_file.empty() &&
      !ConfigureStorageFromTaskFile(view->plan.s3_file).ok()) {
    return;
  }
  status->checkpoint_dir = job->train.output_dir;
  status->checkpoints = RunCheckpoints(*job, status->run_id);
}

Status RunStatus(const StatusFlags& f, Context* ctx) {
  DTF_ASSIGN_OR_RETURN(const std::string dir, FindRun(f.runs, f.run));
  if ((f.json || f.watch) && launch::IsHandedOffRun(dir)) {
    return InvalidArgumentError(
        StrCat(f.json ? "--json" : "--watch", ": not for run ",
               f.run.empty() ? dir : f.run,
               ", which a cluster's engine runs (Kubernetes): dtf status shows "
               "kubectl's view of its objects and pods"));
  }
  if (auto engine =
          launch::QueryHandedOffRun(dir, launch::EngineQuery::kStatus)) {
    return *engine;
  }
  const bool clear = f.watch && !f.json && ::isatty(STDOUT_FILENO) == 1;
  for (;;) {
    DTF_ASSIGN_OR_RETURN(launch::RunStatus status,
                         launch::CollectRunStatus(dir, kRpcDeadline));
    AddCheckpoints(dir, &status);
    std::string text = f.json
                           ? launch::RunStatusToJson(status)
                           : launch::RunStatusToText(status, launch::NowMs());
    if (clear) text = "\033[H\033[2J" + text;
    std::fwrite(text.data(), 1, text.size(), stdout);
    DTF_RETURN_IF_ERROR(FlushStdout());
    if (!f.watch || status.over()) return OkStatus();
    // A second between refreshes, cut short by Ctrl-C.
    for (int i = 0; i < 20; ++i) {
      if (ctx->cancel != nullptr && ctx->cancel->load()) return OkStatus();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (!clear && !f.json) std::fputs("\n", stdout);
  }
}

}  // namespace

void SetupStatus(CLI::App* app, Context* ctx) {
  auto f = std::make_shared<StatusFlags>();
  CLI::App* sub = app->add_subcommand(
      "status",
      "Show how a run goes: each task's state, address, step, loss, "
      "examples/s, last heartbeat and restarts");
  sub->add_option("run", f->run,
                  "The run id, or a unique prefix (default: the latest run)");
  AddRunsFlags(sub, &f->runs);
  sub->add_flag("--json", f->json, "Print the status as JSON");
  sub->add_flag("--watch", f->watch,
                "Refresh every second until the run ends or Ctrl-C");
  sub->callback([f, ctx] { ctx->status = RunStatus(*f, ctx); });
}

}  // namespace dtf::cli
