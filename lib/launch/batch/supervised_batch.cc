#include "lib/launch/batch/supervised_batch.h"

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/file.h"
#include "lib/base/os.h"
#include "lib/base/strings.h"
#include "lib/launch/batch/shard_progress.h"
#include "lib/launch/batch/shards.h"
#include "lib/launch/supervisor.h"

namespace dtf::launch {
namespace {

namespace fs = std::filesystem;

std::string Absolute(const std::string& path) {
  std::error_code ec;
  return fs::absolute(path, ec).lexically_normal().string();
}

std::vector<std::string> ShardPaths(const std::string& output, int w) {
  std::vector<std::string> paths;
  for (int k = 0; k < w; ++k) paths.push_back(ShardOutputPath(output, k, w));
  return paths;
}

// Removes shard outputs and their indexes, and the temporary files of a
// task stopped while writing them (WriteFileAtomically's
// ".<name>.tmp.XXXXXX"): they are the launcher's own files, none is left
// behind, whatever the outcome.
void RemoveShardFiles(const std::vector<std::string>& shards) {
  // The temporary files' prefixes (".<shard name>"), by directory: each
  // directory is listed once.
  std::map<fs::path, std::vector<std::string>> temps;
  for (const std::string& shard : shards) {
    std::error_code ec;
    fs::remove(shard, ec);
    fs::remove(ShardIndexPath(shard), ec);
    const fs::path path(shard);
    temps[path.parent_path()].push_back(StrCat(".", path.filename().string()));
  }
  for (const auto& [dir, prefixes] : temps) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
         it.increment(ec)) {
      const std::string name = it->path().filename().string();
      for (const std::string& temp : prefixes) {
        if (name.starts_with(temp) &&
            (name.find(".tmp.", temp.size()) == temp.size() ||
             name.find(".rows.tmp.", temp.size()) == temp.size())) {
          std::error_code gone;
          fs::remove(it->path(), gone);
          break;
        }
      }
    }
  }
}

// The command of a task: the job's arguments for its files, then its
// shard flags.
std::vector<std::string> ShardArgv(const BatchJob& job,
                                   const ShardTaskFiles& files,
                                   const TaskPlan& task,
                                   const std::string& binary) {
  std::vector<std::string> argv = {binary};
  for (std::string& a : job.args(files.dir, files.inputs)) {
    argv.push_back(std::move(a));
  }
  argv.insert(argv.end(), {"--shard", std::to_string(task.index), "--of",
                           std::to_string(job.shards), "--output", files.shard,
                           "--ready-file", task.ready_file});
  return argv;
}

StatusOr<std::string> MergeShards(const std::vector<std::string>& paths,
                                  int64_t num_files, bool csv) {
  std::vector<ShardOutput> shards;
  for (const std::string& path : paths) {
    ShardOutput s;
    s.name = path;
    DTF_ASSIGN_OR_RETURN(s.text, ReadFileToString(s.name));
    const std::string index_path = ShardIndexPath(s.name);
    DTF_ASSIGN_OR_RETURN(const std::string index, ReadFileToString(index_path));
    DTF_ASSIGN_OR_RETURN(s.index, ShardIndexFromText(index, index_path));
    shards.push_back(std::move(s));
  }
  return MergeShardOutputs(shards, num_files, csv);
}

class SupervisedBatchRunner : public BatchRunner {
 public:
  SupervisedBatchRunner(Profile profile,
                        std::unique_ptr<ShardPlacement> placement,
                        RunStarter start)
      : profile_(std::move(profile)),
        placement_(std::move(placement)),
        start_(std::move(start)) {}

  Status Run(const BatchJob& job, const BatchIo& io) override;

 private:
  // The plan's request: every task runs the job's command on its shard.
  StatusOr<PlanRequest> Request(const BatchJob& job,
                                const std::vector<std::string>& files) const;
  // Waits for the started run, collects and merges its shards.
  Status Finish(const BatchJob& job, size_t num_files, launch::Run& run,
                ShardProgress& progress, const BatchIo& io) const;

  const Profile profile_;
  const std::unique_ptr<ShardPlacement> placement_;
  const RunStarter start_;
};

StatusOr<PlanRequest> SupervisedBatchRunner::Request(
    const BatchJob& job, const std::vector<std::string>& files) const {
  PlanRequest request;
  request.profile = profile_;
  // The plan's "job" is the directory the tasks read: what the run is
  // about.
  request.job = job.dir;
  DTF_ASSIGN_OR_RETURN(request.binary, SelfExecutable());
  request.runs_dir = job.runs_dir;
  request.overrides.workers = job.shards;
  request.s3_credentials = job.s3_credentials;
  request.s3_variables = job.s3_variables;
  DTF_RETURN_IF_ERROR(placement_->Prepare(job, files, &request));
  const ShardPlacement* placement = placement_.get();
  request.batch_command = [&job, files, placement](const TaskPlan& task,
                                                   const std::string& binary,
                                                   const std::string& job_dir) {
    return ShardArgv(job, placement->TaskFiles(job, files, task, job_dir), task,
                     binary);
  };
  return request;
}

Status SupervisedBatchRunner::Run(const BatchJob& given, const BatchIo& io) {
  if (!given.render_dir.empty()) {
    return InvalidArgumentError(
        StrCat("--render: only for a Kubernetes profile (", profile_.source,
               " has backend = \"", BackendName(profile_.backend), "\")"));
  }
  // The tasks read the directory and the inputs at this machine's paths.
  BatchJob job = given;
  job.dir = Absolute(given.dir);
  for (std::string& input : job.inputs) input = Absolute(input);
  // A pattern that matches nothing stops here, before any task starts.
  DTF_ASSIGN_OR_RETURN(const std::vector<std::string> files,
                       job.list_inputs(job.inputs));
  // So does a directory the tasks would refuse.
  DTF_RETURN_IF_ERROR(job.check_dir());
  DTF_ASSIGN_OR_RETURN(PlanRequest request, Request(job, files));

  const int w = job.shards;
  ShardProgress progress(io.info, job.title, job.done, static_cast<size_t>(w));
  RunOptions options;
  options.cancel = io.cancel;
  options.on_output = [&](const TaskPlan& task, Stream stream,
                          std::string_view line) {
    if (stream == Stream::kStderr &&
        progress.Take(static_cast<size_t>(task.index), line)) {
      return;
    }
    io.task_line(task.name(), stream, line);
  };
  options.on_note = [&](std::string_view note) {
    io.info(StrCat("dtf: ", note));
  };

  const std::vector<std::string> beside = ShardPaths(job.output, w);
  RemoveShardFiles(beside);
  const std::string runs_dir = request.runs_dir;
  const std::string run_id = request.run_id;
  StatusOr<std::unique_ptr<launch::Run>> run =
      start_(std::move(request), options);
  if (!run.ok()) {
    placement_->CleanFailedStart(job, (fs::path(runs_dir) / run_id).string(),
                                 io);
    RemoveShardFiles(beside);
    return run.status();
  }
  io.info(StrCat("dtf: ", job.title, ": run ", (*run)->run_id(), " (",
                 (*run)->plan().run_dir, "), ", w, " shard", w == 1 ? "" : "s",
                 " of ", files.size(), " file", files.size() == 1 ? "" : "s",
                 "; Ctrl-C stops it"));
  return Finish(job, files.size(), **run, progress, io);
}

Status SupervisedBatchRunner::Finish(const BatchJob& job, size_t num_files,
                                     launch::Run& run, ShardProgress& progress,
                                     const BatchIo& io) const {
  // Where the tasks' shards are read from here, once the run is over.
  std::vector<std::string> shards;
  for (const TaskPlan& task : run.plan().tasks) {
    shards.push_back(placement_->CollectedShard(job, task));
  }
  const RunOutcome outcome = run.Wait();
  const Status collected =
      placement_->Collect(job, run.plan(), outcome.status.ok(), io);
  // The run's own error first; then the fetch's.
  const Status failed = outcome.status.ok() ? collected : outcome.status;
  if (!failed.ok()) {
    RemoveShardFiles(shards);
    return failed;
  }
  progress.Show(true);
  StatusOr<std::string> merged =
      MergeShards(shards, static_cast<int64_t>(num_files), job.csv);
  RemoveShardFiles(shards);
  if (!merged.ok()) return merged.status();
  DTF_RETURN_IF_ERROR(WriteFileAtomically(job.output, *merged));
  const int w = job.shards;
  io.info(StrCat("dtf: ", job.title, ": merged ", w, " shard",
                 w == 1 ? "" : "s", " into ", job.output_name));
  return OkStatus();
}

}  // namespace

std::string TaskDirShardPath(const TaskPlan& task, const std::string& output,
                             int w) {
  return StrCat(
      task.dir, "/",
      fs::path(ShardOutputPath(output, task.index, w)).filename().string());
}

Status ShardPlacement::Prepare(const BatchJob& /*job*/,
                               const std::vector<std::string>& /*files*/,
                               PlanRequest* /*request*/) const {
  return OkStatus();
}

ShardTaskFiles ShardPlacement::TaskFiles(
    const BatchJob& job, const std::vector<std::string>& /*files*/,
    const TaskPlan& task, const std::string& /*job_dir*/) const {
  return {job.dir, job.inputs,
          ShardOutputPath(job.output, task.index, job.shards)};
}

std::string ShardPlacement::CollectedShard(const BatchJob& job,
                                           const TaskPlan& task) const {
  return ShardOutputPath(job.output, task.index, job.shards);
}

Status ShardPlacement::Collect(const BatchJob& /*job*/, const Plan& /*plan*/,
                               bool /*ok*/, const BatchIo& /*io*/) const {
  return OkStatus();
}

void ShardPlacement::CleanFailedStart(const BatchJob& /*job*/,
                                      const std::string& /*run_dir*/,
                                      const BatchIo& /*io*/) const {}

std::unique_ptr<BatchRunner> NewSupervisedBatchRunner(
    Profile profile, std::unique_ptr<ShardPlacement> placement,
    RunStarter start) {
  return std::make_unique<SupervisedBatchRunner>(
      std::move(profile), std::move(placement), std::move(start));
}

}  // namespace dtf::launch
