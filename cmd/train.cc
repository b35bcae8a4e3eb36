// dtf train: train a job's model in one process.
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cmd/app.h"
#include "cmd/cli_output.h"
#include "cmd/flags.h"
#include "cmd/output_file.h"
#include "cmd/remote_output.h"
#include "cmd/train_report.h"
#include "lib/base/device_name.h"
#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/data/job_file.h"
#include "lib/runtime/train/train_types.h"
#include "lib/runtime/train/trainer.h"

namespace dtf::cli {
namespace {

struct TrainFlags {
  std::string job = "dtf.toml";
  int64_t batch_size = 0;
  int64_t steps = 0;
  int64_t epochs = 0;
  int threads = 0;
  std::string device;
  bool no_eval = false;
  bool no_input_cache = false;
  bool restart = false;
  bool quiet = false;
  std::string metrics_out;
  std::vector<std::string> set;
};

Status RunTrain(const TrainFlags& f, Context* ctx) {
  if (!f.metrics_out.empty()) {
    // Refused before training rather than after it.
    DTF_RETURN_IF_ERROR(OutputTarget("--metrics-out", f.metrics_out).status());
  }
  DTF_ASSIGN_OR_RETURN(JobFile job, LoadJobFile(f.job, f.set));
  DTF_ASSIGN_OR_RETURN(std::unique_ptr<StorageMirror> mirror,
                       MirrorOutputDir(&job));
  if (!f.device.empty()) {
    StatusOr<DeviceName> device = ParseDeviceName(f.device);
    if (!device.ok()) {
      return InvalidArgumentError(
          StrCat("--device: ", Message(device.status())));
    }
    job.train.device = *device;
  }
  if (f.no_input_cache) job.train.input_cache = false;
  const Console& console = ctx->console;
  runtime::TrainOptions options;
  options.batch_size = f.batch_size;
  options.steps = f.steps;
  options.epochs = f.epochs;
  options.threads = f.threads;
  options.eval = !f.no_eval;
  options.resume = !f.restart;
  options.cancel = ctx->cancel;
  options.on_note = [&](std::string_view text) {
    if (!f.quiet) console.Info(text);
  };
  options.on_progress = [&](const runtime::TrainProgress& p) {
    if (f.quiet) return;
    console.Info(
        fmt::format("step {:>7}  epoch {:>3}  loss {:.4f}  {:>9.0f} examples/s",
                    p.step, p.epoch, p.loss, p.examples_per_sec));
  };
  options.on_eval = [&](const runtime::EvalReport& e) {
    if (f.quiet) return;
    console.Info(EvalLine(e));
  };
  StatusOr<runtime::TrainResult> trained = runtime::Train(job, options);
  DTF_RETURN_IF_ERROR(FinishOutputMirror(mirror.get(), trained.status()));
  runtime::TrainResult r = std::move(*trained);
  r.export_dir = RemoteName(mirror.get(), r.export_dir);
  r.checkpoint = RemoteName(mirror.get(), r.checkpoint);
  if (!f.metrics_out.empty()) {
    DTF_RETURN_IF_ERROR(
        WriteOutput("--metrics-out", f.metrics_out, MetricsJson(r)));
  }
  std::string summary = fmt::format(
      "trained {} steps ({} examples) in {:.1f} s, {:.0f} "
      "examples/s",
      r.steps, r.examples, r.train_seconds, r.examples_per_sec);
  if (r.eval) StrAppend(&summary, "; ", FormatMetrics(r.eval->metrics));
  if (const std::string best = BestLine(r); !best.empty()) {
    StrAppend(&summary, "\n", best);
  }
  StrAppend(&summary, "\nmodel: ", r.export_dir, "\ncheckpoint: ", r.checkpoint,
            "\n");
  std::fputs(summary.c_str(), stdout);
  DTF_RETURN_IF_ERROR(FlushStdout());
  return OkStatus();
}

}  // namespace

void SetupTrain(CLI::App* app, Context* ctx) {
  auto f = std::make_shared<TrainFlags>();
  CLI::App* sub = app->add_subcommand(
      "train",
      "Train the job's model in one process: progress, evaluation, a "
      "checkpoint and an exported model in the output directory");
  sub->add_option("--job", f->job, "The job file (default: dtf.toml)");
  sub->add_option("--batch-size", f->batch_size,
                  "Examples per step (default: the job's train.batch_size)")
      ->check(IntAtLeast<int64_t>(1));
  sub->add_option("--steps", f->steps,
                  "Train this many steps in all (overrides the job's epochs "
                  "or steps)")
      ->check(IntAtLeast<int64_t>(1));
  sub->add_option("--epochs", f->epochs,
                  "Train this many epochs in all (overrides the job's epochs "
                  "or steps)")
      ->check(IntAtLeast<int64_t>(1))
      ->excludes("--steps");
  sub->add_option("--threads", f->threads,
                  "Compute threads (default: the job's train.threads, 0 = "
                  "one per core)")
      ->check(IntAtLeast<int>(0));
  sub->add_option("--device", f->device,
                  "cpu, cuda or cuda:N (default: the job's train.device)");
  sub->add_flag("--no-eval", f->no_eval, "Skip evaluation");
  sub->add_flag("--no-input-cache", f->no_input_cache,
                "Read and parse the records again every epoch (default: the "
                "job's train.input_cache; on, later epochs take the parsed "
                "rows from memory or a spill file)");
  sub->add_flag("--restart", f->restart,
                "Start afresh, replacing the checkpoint in the output "
                "directory (default: go on from it)");
  sub->add_flag("--quiet", f->quiet, "Print only the summary");
  sub->add_option("--metrics-out", f->metrics_out,
                  "Write the final metrics as JSON to this file (atomically; "
                  "through a symlink to its target), or '-' for stdout");
  sub->add_option("--set", f->set,
                  "Override a job-file key: section.key=value (repeatable)");
  sub->callback([f, ctx] { ctx->status = RunTrain(*f, ctx); });
}

}  // namespace dtf::cli
