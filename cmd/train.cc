// dtf train: train a job's model in one process.
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "cmd/app.h"
#include "lib/base/strings.h"
#include "lib/data/file.h"
#include "lib/data/job_file.h"
#include "lib/data/json.h"
#include "lib/runtime/trainer.h"

namespace dtf::cli {
namespace {

struct TrainFlags {
  std::string job = "dtf.toml";
  int64_t batch_size = 0;
  int64_t steps = 0;
  int64_t epochs = 0;
  int threads = 0;
  bool no_eval = false;
  bool restart = false;
  bool quiet = false;
  std::string metrics_out;
};

std::string FormatMetrics(const runtime::EvalMetrics& m) {
  std::string out;
  for (const auto& [name, value] : m.values) {
    StrAppend(&out, out.empty() ? "" : "  ", name, " ",
              fmt::format("{:.4f}", value));
  }
  return out;
}

void AppendJsonNumber(std::string* out, std::string_view key, double value) {
  StrAppend(out, out->size() > 1 ? "," : "", JsonString(key), ":");
  if (std::isfinite(value)) {
    StrAppend(out, fmt::format("{}", value));
  } else {
    StrAppend(out, "null");
  }
}

std::string MetricsJson(const runtime::TrainResult& r) {
  std::string out = "{";
  AppendJsonNumber(&out, "steps", double(r.steps));
  AppendJsonNumber(&out, "examples", double(r.examples));
  AppendJsonNumber(&out, "train_seconds", r.train_seconds);
  AppendJsonNumber(&out, "examples_per_sec", r.examples_per_sec);
  AppendJsonNumber(&out, "train_loss", r.loss);
  AppendJsonNumber(&out, "parameters", double(r.num_parameters));
  if (r.eval) {
    for (const auto& [name, value] : r.eval->metrics.values) {
      AppendJsonNumber(&out, name, value);
    }
    AppendJsonNumber(&out, "eval_examples", double(r.eval->metrics.examples));
    StrAppend(&out, ",\"eval_split\":", JsonString(r.eval->split));
  } else {
    AppendJsonNumber(&out, "loss", r.loss);
  }
  StrAppend(&out, ",\"checkpoint\":", JsonString(r.checkpoint),
            ",\"model\":", JsonString(r.export_dir), "}\n");
  return out;
}

Status RunTrain(const TrainFlags& f, Context* ctx) {
  DTF_ASSIGN_OR_RETURN(JobFile job, LoadJobFile(f.job));
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
    console.Info(StrCat("eval  step ", e.step, "  (", e.split, ", ",
                        e.metrics.examples, " examples)  ",
                        FormatMetrics(e.metrics)));
  };
  DTF_ASSIGN_OR_RETURN(runtime::TrainResult r, runtime::Train(job, options));
  if (!f.metrics_out.empty()) {
    DTF_RETURN_IF_ERROR(WriteFileAtomically(f.metrics_out, MetricsJson(r)));
  }
  std::string summary = fmt::format(
      "trained {} steps ({} examples) in {:.1f} s, {:.0f} "
      "examples/s",
      r.steps, r.examples, r.train_seconds, r.examples_per_sec);
  if (r.eval) StrAppend(&summary, "; ", FormatMetrics(r.eval->metrics));
  StrAppend(&summary, "\nmodel: ", r.export_dir, "\ncheckpoint: ", r.checkpoint,
            "\n");
  std::fputs(summary.c_str(), stdout);
  if (std::fflush(stdout) != 0) return ErrnoToStatus(errno, "<stdout>");
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
      ->check(CLI::PositiveNumber);
  sub->add_option("--steps", f->steps,
                  "Train this many steps in all (overrides the job's epochs "
                  "or steps)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--epochs", f->epochs,
                  "Train this many epochs in all (overrides the job's epochs "
                  "or steps)")
      ->check(CLI::PositiveNumber)
      ->excludes("--steps");
  sub->add_option("--threads", f->threads,
                  "Compute threads (default: the job's train.threads, 0 = "
                  "one per core)")
      ->check(CLI::NonNegativeNumber);
  sub->add_flag("--no-eval", f->no_eval, "Skip evaluation");
  sub->add_flag("--restart", f->restart,
                "Start afresh, replacing the checkpoint in the output "
                "directory (default: go on from it)");
  sub->add_flag("--quiet", f->quiet, "Print only the summary");
  sub->add_option("--metrics-out", f->metrics_out,
                  "Write the final metrics as JSON to this file");
  sub->callback([f, ctx] { ctx->status = RunTrain(*f, ctx); });
}

}  // namespace dtf::cli
