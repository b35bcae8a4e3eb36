// dtf predict --profile: one `dtf predict --shard k --of W` task per worker
// of the profile, run by the launch supervisor, then their outputs merged
// in input order (cmd/predict_shards.h).
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "cmd/cli_output.h"
#include "cmd/output_file.h"
#include "cmd/predict.h"
#include "cmd/predict_k8s.h"
#include "cmd/predict_progress.h"
#include "cmd/predict_remote.h"
#include "cmd/predict_shards.h"
#include "cmd/run_common.h"
#include "lib/base/file.h"
#include "lib/base/os.h"
#include "lib/base/strings.h"
#include "lib/launch/run_id.h"
#include "lib/launch/supervisor.h"

namespace dtf::cli {
namespace {

namespace fs = std::filesystem;

// Where task k of w writes its shard as the launcher sees it: beside
// `output`, or under a Slurm run, in its task directory in the run
// directory (on storage the nodes and the launcher share).
std::string ShardPathOf(const launch::TaskPlan& task, const std::string& output,
                        int w, bool slurm) {
  return slurm ? RemoteShardPath(task, output, w)
               : ShardOutputPath(output, task.index, w);
}

// The shard outputs of a run, in task order.
std::vector<std::string> ShardPaths(const launch::Plan& plan,
                                    const std::string& output, int w) {
  std::vector<std::string> paths;
  for (const launch::TaskPlan& task : plan.tasks) {
    paths.push_back(ShardPathOf(task, output, w, plan.on_slurm()));
  }
  return paths;
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

// The command of a task: this predict, on shard task.index of w, reading
// `inputs` and `model` and writing `shard`, all as its host has them.
std::vector<std::string> ShardArgv(const PredictFlags& f,
                                   const std::vector<std::string>& inputs,
                                   const std::string& model,
                                   const std::string& shard, int threads, int w,
                                   const launch::TaskPlan& task,
                                   const std::string& binary) {
  std::vector<std::string> argv = {binary};
  for (std::string& a : PredictTaskArgs(f, inputs, model, threads)) {
    argv.push_back(std::move(a));
  }
  argv.insert(argv.end(),
              {"--shard", std::to_string(task.index), "--of", std::to_string(w),
               "--output", shard, "--ready-file", task.ready_file});
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

}  // namespace

std::vector<std::string> PredictTaskArgs(const PredictFlags& f,
                                         const std::vector<std::string>& inputs,
                                         const std::string& model,
                                         int threads) {
  std::vector<std::string> args = {"predict", "--model", model};
  for (const std::string& input : inputs) {
    args.push_back("--input");
    args.push_back(input);
  }
  args.insert(args.end(), {"--format", f.format, "--batch-size",
                           std::to_string(f.batch_size), "--threads",
                           std::to_string(threads)});
  if (!f.keep.empty()) {
    args.push_back("--keep");
    args.push_back(absl::StrJoin(f.keep, ","));
  }
  return args;
}

Status RunPredictOnProfile(const PredictFlags& f, Context* ctx) {
  const Console& console = ctx->console;
  if (f.output == "-") {
    return InvalidArgumentError(
        "--profile: needs --output FILE (each task writes its shard beside "
        "it, and the merged output replaces it)");
  }
  DTF_ASSIGN_OR_RETURN(const std::string target,
                       OutputTarget("--output", f.output));
  const std::string output = AbsolutePath(target);
  launch::PlanRequest request;
  DTF_ASSIGN_OR_RETURN(request.profile,
                       launch::ResolveProfile(AbsolutePath("."), f.profile,
                                              ProfileOptionsFromEnv()));
  if (request.profile.backend == launch::BackendKind::kKubernetes) {
    return RunPredictOnKubernetes(f, request.profile, output, ctx);
  }
  if (!f.render_dir.empty()) {
    return InvalidArgumentError(
        StrCat("--render: only for a Kubernetes profile (",
               request.profile.source, " has backend = \"",
               launch::BackendName(request.profile.backend), "\")"));
  }
  // A pattern that matches nothing stops here, before any task starts.
  std::vector<std::string> inputs;
  for (const std::string& input : f.input) {
    inputs.push_back(AbsolutePath(input));
  }
  DTF_ASSIGN_OR_RETURN(const std::vector<std::string> files,
                       PredictInputFiles(inputs));
  // A model that does not load, or a --keep it lacks, stops here too.
  DTF_RETURN_IF_ERROR(CheckPredictModel(f));
  const std::string model = AbsolutePath(f.model);

  const bool remote = request.profile.backend == launch::BackendKind::kSsh;
  const bool slurm = request.profile.backend == launch::BackendKind::kSlurm;
  const int w = f.workers > 0 ? f.workers : request.profile.workers;
  const int threads = f.threads > 0 ? f.threads : request.profile.threads;
  const bool with_data = request.profile.with_data;
  if (remote) {
    DTF_ASSIGN_OR_RETURN(request.batch_files,
                         PredictBatchFiles(model, files, with_data));
    request.batch_files.pack_dir = AbsolutePath(".dtf/pack");
    // Chosen here, so that a run that fails to start is found again to
    // clean its hosts up.
    DTF_ASSIGN_OR_RETURN(request.run_id, launch::NewRunId());
  }
  // The plan's "job" is the model: what the run is about.
  request.job = model;
  DTF_ASSIGN_OR_RETURN(request.binary, SelfExecutable());
  RunsFlags runs;
  runs.runs_dir = f.runs_dir;
  request.runs_dir = RunsDirOf(runs);
  // Without --runs-dir, a Slurm run goes under slurm.run_dir when the
  // profile sets it (storage the nodes share), as dtf launch does.
  if (slurm && f.runs_dir.empty() && !request.profile.slurm.run_dir.empty()) {
    request.runs_dir.clear();
  }
  request.overrides.workers = w;
  request.batch_command = [&f, inputs, files, model, output, threads, w,
                           with_data, slurm](const launch::TaskPlan& task,
                                             const std::string& binary,
                                             const std::string& job) {
    // A local task reads the patterns and the model as given, and so does
    // a Slurm one (shared storage), writing its shard into its task
    // directory; a remote one reads the files as shipped or found on its
    // host (predict_remote.h).
    if (task.work_dir.empty()) {
      return ShardArgv(f, inputs, model, ShardPathOf(task, output, w, slurm),
                       threads, w, task, binary);
    }
    return ShardArgv(f, RemoteInputs(job, files, with_data), job,
                     RemoteShardPath(task, output, w), threads, w, task,
                     binary);
  };

  ShardProgress progress(console, static_cast<size_t>(w));
  std::vector<std::string> names;
  for (int k = 0; k < w; ++k) names.push_back(StrCat("worker:", k));
  const TaskPrefixes prefixes(names, ColorFor(STDERR_FILENO));
  launch::RunOptions options;
  options.cancel = ctx->cancel;
  options.on_output = [&](const launch::TaskPlan& task, launch::Stream stream,
                          std::string_view line) {
    if (stream == launch::Stream::kStderr &&
        progress.Take(static_cast<size_t>(task.index), line)) {
      return;
    }
    const std::string text = StrCat(prefixes.For(task.name()), line, "\n");
    std::FILE* to = stream == launch::Stream::kStdout ? stdout : stderr;
    std::fwrite(text.data(), 1, text.size(), to);
    std::fflush(to);
  };
  options.on_note = [&](std::string_view note) {
    console.Info(StrCat("dtf: ", note));
  };

  const std::vector<std::string> beside = ShardPaths(output, w);
  RemoveShardFiles(beside);
  const std::string runs_dir = request.runs_dir;
  const std::string run_id = request.run_id;
  StatusOr<std::unique_ptr<launch::Run>> run =
      launch::StartRun(std::move(request), options);
  if (!run.ok()) {
    // (A Slurm run that failed to start ran no task: sbatch failed.)
    if (remote) {
      RemoveRemoteShardsOfFailedStart((fs::path(runs_dir) / run_id).string(),
                                      output, w, console);
    }
    RemoveShardFiles(beside);
    return run.status();
  }
  // Where the tasks' shards are read from here, once the run is over.
  const std::vector<std::string> shards = ShardPaths((*run)->plan(), output, w);
  console.Info(StrCat("dtf: predict: run ", (*run)->run_id(), " (",
                      (*run)->plan().run_dir, "), ", w, " shard",
                      w == 1 ? "" : "s", " of ", files.size(), " file",
                      files.size() == 1 ? "" : "s", "; Ctrl-C stops it"));
  const launch::RunOutcome outcome = (*run)->Wait();
  if (remote) {
    // Fetched only after a run that succeeded; removed there either way.
    const Status fetched = FetchRemoteShards((*run)->plan(), output, w,
                                             outcome.status.ok(), console);
    if (outcome.status.ok() && !fetched.ok()) {
      RemoveShardFiles(shards);
      return fetched;
    }
  }
  if (!outcome.status.ok()) {
    RemoveShardFiles(shards);
    return outcome.status;
  }
  progress.Show(true);
  StatusOr<std::string> merged = MergeShards(
      shards, static_cast<int64_t>(files.size()), f.format == "csv");
  RemoveShardFiles(shards);
  if (!merged.ok()) return merged.status();
  DTF_RETURN_IF_ERROR(WriteFileAtomically(output, *merged));
  console.Info(StrCat("dtf: predict: merged ", w, " shard", w == 1 ? "" : "s",
                      " into ", f.output));
  return OkStatus();
}

}  // namespace dtf::cli
