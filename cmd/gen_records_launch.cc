#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cmd/cli_output.h"
#include "cmd/gen_records.h"
#include "cmd/run_common.h"
#include "cmd/task_storage.h"
#include "lib/base/file.h"
#include "lib/base/os.h"
#include "lib/base/storage.h"
#include "lib/base/strings.h"
#include "lib/base/task_name.h"
#include "lib/data/gen_records.h"
#include "lib/data/job_file.h"
#include "lib/data/shard_parts.h"
#include "lib/launch/plan_hooks.h"
#include "lib/launch/supervisor.h"

namespace dtf::cli {
namespace {

namespace fs = std::filesystem;

// Where task `task` stages its part: <task dir>/records/<run>, a directory
// per run (source) of the job.
std::string StageDir(const launch::TaskPlan& task) {
  return StrCat(task.dir, "/records");
}

// The request of the batch plan: worker k converts part k of W.
StatusOr<launch::PlanRequest> GenRecordsRequest(const GenRecordsOnProfile& g,
                                                launch::Profile profile,
                                                int w) {
  launch::PlanRequest request;
  request.profile = std::move(profile);
  request.job = AbsolutePath(g.job);
  DTF_ASSIGN_OR_RETURN(request.binary, SelfExecutable());
  if (!g.runs_dir.empty()) request.runs_dir = AbsolutePath(g.runs_dir);
  request.overrides.workers = g.workers;
  // The tasks read the job's s3:// inputs with the run's S3 settings.
  DTF_RETURN_IF_ERROR(PrepareTaskStorage(&request));
  const std::vector<std::string> flags = g.task_flags;
  request.batch_command = [flags, w](const launch::TaskPlan& task,
                                     const std::string& binary,
                                     const std::string& job) {
    std::vector<std::string> argv = {binary,        "gen-records",
                                     "--job",       job,
                                     "--part",      std::to_string(task.index),
                                     "--of",        std::to_string(w),
                                     "--stage-dir", StageDir(task),
                                     "--overwrite"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    return argv;
  };
  return request;
}

}  // namespace

Status RunGenRecordsOnProfile(const GenRecordsOnProfile& g, Context* ctx) {
  const Console& console = ctx->console;
  DTF_ASSIGN_OR_RETURN(const JobFile job, LoadJobFile(g.job));
  const std::vector<GenRecordsOptions> runs = GenRecordsOptionsFromJob(job);
  if (runs.empty()) {
    return InvalidArgumentError(StrCat(g.job, ": [data] names no csv sources"));
  }
  for (const GenRecordsOptions& o : runs) {
    if (IsRemotePath(o.out_dir)) {
      return InvalidArgumentError(StrCat(
          "--profile: ", o.out_dir,
          ": the tasks write their shards into the run directory and this "
          "machine moves them into place, which an s3:// output does not "
          "allow; run gen-records without --profile for it"));
    }
  }
  DTF_ASSIGN_OR_RETURN(launch::Profile profile,
                       launch::ResolveProfile(
                           fs::path(AbsolutePath(g.job)).parent_path().string(),
                           g.profile, ProfileOptionsFromEnv()));
  const launch::PlanHooks& hooks = launch::PlanHooksOf(profile.backend);
  if (hooks.HandsOff() || hooks.FilesOnHosts()) {
    return InvalidArgumentError(StrCat(
        "--profile ", g.profile, ": backend = \"",
        launch::BackendName(profile.backend),
        "\" keeps its tasks' files on their own hosts; gen-records --profile "
        "needs a backend whose tasks share this machine's files (local, "
        "slurm, spark)"));
  }
  std::vector<ShardPartsRun> parts(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    parts[i].out_dir = runs[i].out_dir;
    for (const SplitFraction& s : runs[i].splits) {
      parts[i].splits.push_back(s.name);
    }
    if (parts[i].splits.empty()) parts[i].splits.push_back("");
  }
  // Shards in the way stop the run before any task starts.
  DTF_RETURN_IF_ERROR(CheckShardPartsOutput(parts, g.overwrite));

  const int w = g.workers > 0 ? g.workers : profile.workers;
  DTF_ASSIGN_OR_RETURN(launch::PlanRequest request,
                       GenRecordsRequest(g, std::move(profile), w));
  std::vector<std::string> names;
  for (int k = 0; k < w; ++k) {
    names.push_back(TaskName{Role::kWorker, k}.ToString());
  }
  const TaskPrefixes prefixes(names, ColorFor(STDERR_FILENO));
  launch::RunOptions options;
  options.cancel = ctx->cancel;
  options.on_output = [&prefixes](const launch::TaskPlan& task,
                                  launch::Stream stream,
                                  std::string_view line) {
    const std::string text = StrCat(prefixes.For(task.name()), line, "\n");
    std::FILE* to = stream == launch::Stream::kStdout ? stdout : stderr;
    std::fwrite(text.data(), 1, text.size(), to);
    std::fflush(to);
  };
  options.on_note = [&console](std::string_view note) {
    console.Info(StrCat("dtf: ", note));
  };
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<launch::Run> run,
                       launch::StartRun(std::move(request), options));
  const launch::Plan& plan = run->plan();
  console.Info(StrCat("dtf: gen-records: run ", run->run_id(), " (",
                      plan.run_dir, "), ", plan.tasks.size(), " task",
                      plan.tasks.size() == 1 ? "" : "s", "; Ctrl-C stops it"));
  const launch::RunOutcome outcome = run->Wait();
  // What the tasks staged goes into place, or away with a failed run.
  for (size_t i = 0; i < runs.size(); ++i) {
    for (const launch::TaskPlan& task : plan.tasks) {
      parts[i].part_dirs.push_back(StrCat(StageDir(task), "/", i));
    }
  }
  Status status = outcome.status;
  if (status.ok()) status = PublishShardParts(parts, g.overwrite);
  for (const launch::TaskPlan& task : plan.tasks) {
    std::error_code ec;
    fs::remove_all(StageDir(task), ec);
  }
  DTF_RETURN_IF_ERROR(status);
  for (const ShardPartsRun& p : parts) {
    console.Info(
        StrCat("gen-records: ", plan.tasks.size(), " tasks wrote ", p.out_dir));
  }
  return OkStatus();
}

}  // namespace dtf::cli
