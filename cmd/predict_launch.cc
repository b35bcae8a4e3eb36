// dtf predict --profile: the input scored as a batch job on the profile's
// workers (lib/launch/batch/batch_job.h), one `dtf predict --shard k --of W`
// task per shard, their outputs merged in input order.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_join.h"
#include "cmd/cli_output.h"
#include "cmd/output_file.h"
#include "cmd/predict.h"
#include "cmd/run_common.h"
#include "cmd/task_storage.h"
#include "lib/base/storage.h"
#include "lib/base/strings.h"
#include "lib/base/task_name.h"
#include "lib/launch/batch/batch_job.h"
#include "lib/launch/batch_runners.h"
#include "lib/runtime/export/exported_model.h"

namespace dtf::cli {
namespace {

// The arguments of a task scoring with f's format, batch size and --keep:
// "predict --model MODEL --input ... --threads THREADS ...", without its
// shard and output.
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

// The batch job of f on `profile`, merging into `output` (absolute).
launch::BatchJob PredictJob(const PredictFlags& f,
                            const launch::Profile& profile,
                            const std::string& output) {
  launch::BatchJob job;
  job.title = "predict";
  job.done = "scored";
  job.shards = f.workers > 0 ? f.workers : profile.workers;
  job.output = output;
  job.output_name = f.output;
  job.csv = f.format == "csv";
  job.dir = f.model;
  job.dir_files = {std::string(runtime::kModelToml),
                   std::string(runtime::kVariablesFile)};
  // A model that does not load, or a --keep it lacks.
  job.check_dir = [&f] { return CheckPredictModel(f); };
  job.inputs = f.input;
  job.list_inputs = PredictInputFiles;
  const int threads = f.threads > 0 ? f.threads : profile.threads;
  job.args = [&f, threads](const std::string& model,
                           const std::vector<std::string>& inputs) {
    return PredictTaskArgs(f, inputs, model, threads);
  };
  RunsFlags runs;
  runs.runs_dir = f.runs_dir;
  job.runs_dir = RunsDirOf(runs);
  job.runs_dir_given = !f.runs_dir.empty();
  job.render_dir = f.render_dir;
  return job;
}

}  // namespace

Status RunPredictOnProfile(const PredictFlags& f, Context* ctx) {
  const Console& console = ctx->console;
  if (f.output == "-") {
    return InvalidArgumentError(
        "--profile: needs --output FILE (each task writes its shard beside "
        "it, and the merged output replaces it)");
  }
  DTF_ASSIGN_OR_RETURN(const std::string target,
                       OutputTarget("--output", f.output));
  DTF_ASSIGN_OR_RETURN(launch::Profile profile,
                       launch::ResolveProfile(AbsolutePath("."), f.profile,
                                              ProfileOptionsFromEnv()));
  launch::BatchJob job = PredictJob(f, profile, AbsolutePath(target));
  // The tasks get the run's S3 settings and credentials, as a training
  // run's do, when the model, an input or the output is in a bucket (or
  // the profile names an [s3] table).
  bool s3 = profile.s3.present || IsRemotePath(f.model) || IsRemotePath(target);
  for (const std::string& input : f.input) s3 = s3 || IsRemotePath(input);
  if (s3) {
    DTF_RETURN_IF_ERROR(
        PrepareTaskS3(profile, &job.s3_credentials, &job.s3_variables));
  }

  std::vector<std::string> names;
  for (int k = 0; k < job.shards; ++k)
    names.push_back(TaskName{Role::kWorker, k}.ToString());
  const TaskPrefixes prefixes(names, ColorFor(STDERR_FILENO));
  launch::BatchIo io;
  io.info = [&console](std::string_view line) { console.Info(line); };
  io.warning = [&console](std::string_view line) { console.Warning(line); };
  io.task_line = [&prefixes](const std::string& task, launch::Stream stream,
                             std::string_view line) {
    const std::string text = StrCat(prefixes.For(task), line, "\n");
    std::FILE* to = stream == launch::Stream::kStdout ? stdout : stderr;
    std::fwrite(text.data(), 1, text.size(), to);
    std::fflush(to);
  };
  io.print = [](std::string_view text) { return PrintStdout(text); };
  io.cancel = ctx->cancel;
  return launch::MakeBatchRunner(std::move(profile))->Run(job, io);
}

}  // namespace dtf::cli
