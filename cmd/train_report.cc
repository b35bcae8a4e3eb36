#include "cmd/train_report.h"

#include <cmath>
#include <filesystem>
#include <optional>

#include "lib/base/strings.h"
#include "lib/data/json.h"

namespace dtf::cli {
namespace {

void AppendJsonNumber(std::string* out, std::string_view key, double value) {
  StrAppend(out, out->size() > 1 ? "," : "", JsonString(key), ":");
  if (std::isfinite(value)) {
    StrAppend(out, fmt::format("{}", value));
  } else {
    StrAppend(out, "null");
  }
}

}  // namespace

std::string ProgressLine(const runtime::TrainProgress& p) {
  return fmt::format(
      "step {:>7}  epoch {:>3}  loss {:.4f}  {:>9.0f} examples/s", p.step,
      p.epoch, p.loss, p.examples_per_sec);
}

std::string EvalLine(const runtime::EvalReport& e) {
  return StrCat("eval  step ", e.step, "  (", e.split, ", ", e.metrics.examples,
                " examples)  ", FormatMetrics(e.metrics));
}

std::string FormatMetrics(const runtime::EvalMetrics& m) {
  std::string out;
  for (const auto& [name, value] : m.values) {
    StrAppend(&out, out.empty() ? "" : "  ", name, " ",
              fmt::format("{:.4f}", value));
  }
  return out;
}

std::string BestLine(const runtime::TrainResult& r) {
  if (!r.best_eval) return "";
  const std::optional<double> value = r.best_eval->metrics.Get(r.best_metric);
  std::string out = StrCat(
      "best: eval ", r.best_metric, " ",
      fmt::format("{:.4f}", value.value_or(0)), " at step ", r.best_eval->step,
      " (", std::filesystem::path(r.best_checkpoint).filename().string(),
      ", exported)");
  if (r.stopped_early) {
    StrAppend(&out, "; early stopping ended training at step ", r.steps);
  }
  return out;
}

std::string MetricsJson(const runtime::TrainResult& r) {
  std::string out = "{";
  AppendJsonNumber(&out, "steps", double(r.steps));
  AppendJsonNumber(&out, "examples", double(r.examples));
  AppendJsonNumber(&out, "train_seconds", r.train_seconds);
  AppendJsonNumber(&out, "examples_per_sec", r.examples_per_sec);
  AppendJsonNumber(&out, "train_loss", r.loss);
  AppendJsonNumber(&out, "parameters", double(r.num_parameters));
  // The evaluation metrics are the exported model's: the best evaluation's
  // when there is one; the last evaluation's are under "last_eval".
  const std::optional<runtime::EvalReport>& exported =
      r.best_eval ? r.best_eval : r.eval;
  if (exported) {
    for (const auto& [name, value] : exported->metrics.values) {
      AppendJsonNumber(&out, name, value);
    }
    AppendJsonNumber(&out, "eval_examples", double(exported->metrics.examples));
    StrAppend(&out, ",\"eval_split\":", JsonString(exported->split));
  }
  if (r.eval) {
    std::string last;
    AppendJsonNumber(&last, "step", double(r.eval->step));
    for (const auto& [name, value] : r.eval->metrics.values) {
      AppendJsonNumber(&last, name, value);
    }
    StrAppend(&out, ",\"last_eval\":{", last, "}");
  } else {
    AppendJsonNumber(&out, "loss", r.loss);
  }
  if (r.best_eval) {
    AppendJsonNumber(&out, "best_step", double(r.best_eval->step));
    StrAppend(&out, ",\"best_metric\":", JsonString(r.best_metric));
    AppendJsonNumber(&out, "best_value",
                     r.best_eval->metrics.Get(r.best_metric).value_or(NAN));
    StrAppend(&out, ",\"best_checkpoint\":", JsonString(r.best_checkpoint));
  }
  StrAppend(&out, ",\"stopped_early\":", r.stopped_early ? "true" : "false");
  StrAppend(&out, ",\"checkpoint\":", JsonString(r.checkpoint),
            ",\"model\":", JsonString(r.export_dir), "}\n");
  return out;
}

}  // namespace dtf::cli
