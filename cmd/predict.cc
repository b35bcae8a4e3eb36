// dtf predict: score TFRecord shards with an exported model.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cmd/app.h"
#include "cmd/cli_output.h"
#include "cmd/flags.h"
#include "cmd/output_file.h"
#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/data/input_pipeline.h"
#include "lib/data/json.h"
#include "lib/kernels/activation.h"
#include "lib/kernels/context.h"
#include "lib/runtime/checkpoint.h"

namespace dtf::cli {
namespace {

struct PredictFlags {
  std::string model;
  std::vector<std::string> input;
  std::string format = "jsonl";
  std::string output = "-";
  std::vector<std::string> keep;
  int64_t batch_size = 1024;
  int threads = 0;
};

std::string Number(double v) {
  return std::isfinite(v) ? fmt::format("{}", v) : "null";
}

// `text` as a CSV cell: quoted when it holds a comma, quote or newline.
std::string CsvCell(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char ch : text) {
    if (ch == '"') quoted += '"';
    quoted += ch;
  }
  return quoted + "\"";
}

// One kept column's value in row `r` as JSON, or as CSV text.
std::string KeptValue(const Column& c, int64_t r, bool csv) {
  const int64_t n = c.row_size(r);
  const int64_t begin = c.row_begin(r);
  std::string out;
  if (n == 0) return csv ? "" : "null";
  if (n > 1 && !csv) out = "[";
  for (int64_t i = begin; i < begin + n; ++i) {
    if (i > begin) out += csv ? " " : ",";
    switch (c.type) {
      case FeatureType::kInt64:
        StrAppend(&out, c.int64s[size_t(i)]);
        break;
      case FeatureType::kFloat:
        StrAppend(&out, Number(c.floats[size_t(i)]));
        break;
      case FeatureType::kBytes:
        if (csv) {
          StrAppend(&out, c.bytes_value(i));
        } else {
          AppendJsonString(c.bytes_value(i), &out);
        }
        break;
    }
  }
  if (n > 1 && !csv) out += "]";
  return csv ? CsvCell(out) : out;
}

// The name of each class id when the label was mapped from text ("dog"),
// else empty. Several texts may map to one id (">50K" and ">50K."): the
// shortest names it.
std::vector<std::string> ClassNames(const Schema& schema, int64_t classes) {
  std::vector<std::string> names;
  if (!schema.label || schema.label->mapping.empty()) return names;
  names.resize(static_cast<size_t>(std::max<int64_t>(classes, 2)));
  std::vector<bool> named(names.size(), false);
  for (const auto& [text, id] : schema.label->mapping) {
    if (id < 0 || static_cast<size_t>(id) >= names.size()) continue;
    const size_t i = static_cast<size_t>(id);
    if (!named[i] || text.size() < names[i].size()) names[i] = text;
    named[i] = true;
  }
  return names;
}

Status RunPredict(const PredictFlags& f, Context* ctx) {
  // A target that cannot be written is refused before any work.
  DTF_ASSIGN_OR_RETURN(const std::string output,
                       OutputTarget("--output", f.output));
  DTF_ASSIGN_OR_RETURN(runtime::LoadedModel loaded,
                       runtime::LoadExportedModel(f.model));
  const ModelSpec& spec = *loaded.definition.model;
  const Schema& schema = loaded.definition.schema;
  InputPipelineOptions options;
  options.files = f.input;
  options.features = loaded.layer.ParseSpecs(/*with_label=*/false);
  options.batch_size = f.batch_size;
  for (const std::string& name : f.keep) {
    const ColumnSpec* column = schema.FindColumn(name);
    if (column == nullptr) {
      return InvalidArgumentError(
          StrCat("--keep: the model's schema (", f.model,
                 "/model.toml) has no column \"", name, "\""));
    }
    bool parsed = false;
    for (const FeatureParseSpec& s : options.features) parsed |= s.name == name;
    if (parsed) continue;
    const FeatureType type =
        column->type == ValueType::kInt     ? FeatureType::kInt64
        : column->type == ValueType::kFloat ? FeatureType::kFloat
                                            : FeatureType::kBytes;
    options.features.push_back(VarLenFeature(name, type));
  }
  DTF_ASSIGN_OR_RETURN(auto pipeline, InputPipeline::Create(options));

  const kernels::Context kctx = kernels::Context::Cpu(f.threads);
  const bool csv = f.format == "csv";
  const int64_t classes = spec.outputs();
  const std::vector<std::string> names = ClassNames(schema, classes);
  const std::string name_column = names.empty() ? "" : ",class_name";
  std::string out;
  if (csv) {
    for (const std::string& name : f.keep) StrAppend(&out, name, ",");
    if (spec.loss == Loss::kBinaryCrossentropy) {
      StrAppend(&out, "probability,class", name_column, "\n");
    } else if (spec.loss == Loss::kSoftmaxCrossentropy) {
      for (int64_t k = 0; k < classes; ++k) StrAppend(&out, "p", k, ",");
      StrAppend(&out, "class", name_column, "\n");
    } else {
      out += "prediction\n";
    }
  }
  Batch batch;
  runtime::ModelInputs inputs;
  kernels::Tensor logits;
  int64_t rows = 0;
  while (true) {
    if (ctx->cancel && ctx->cancel->load())
      return CancelledError("interrupted");
    DTF_ASSIGN_OR_RETURN(bool more, pipeline->Next(&batch));
    if (!more) break;
    DTF_RETURN_IF_ERROR(loaded.layer.Transform(kctx, batch, false, &inputs));
    DTF_RETURN_IF_ERROR(loaded.model->Forward(kctx, inputs, false, &logits));
    for (int64_t r = 0; r < batch.rows; ++r) {
      const float* z = logits.data() + r * classes;
      if (!csv) out += "{";
      bool first = true;
      auto field = [&](std::string_view key, const std::string& value) {
        if (csv) {
          StrAppend(&out, first ? "" : ",", value);
        } else {
          StrAppend(&out, first ? "" : ",", JsonString(key), ":", value);
        }
        first = false;
      };
      for (const std::string& name : f.keep) {
        field(name, KeptValue(*batch.Find(name), r, csv));
      }
      // The class id and, for a mapped label, its name.
      auto class_fields = [&](int64_t id) {
        field("class", StrCat(id));
        if (names.empty()) return;
        const std::string& name = names[static_cast<size_t>(id)];
        field("class_name", csv ? CsvCell(name) : JsonString(name));
      };
      if (spec.loss == Loss::kBinaryCrossentropy) {
        const double p = 1.0 / (1.0 + std::exp(-double(z[0])));
        field("probability", Number(p));
        class_fields(p >= 0.5 ? 1 : 0);
      } else if (spec.loss == Loss::kSoftmaxCrossentropy) {
        double max = z[0];
        int64_t best = 0;
        for (int64_t k = 1; k < classes; ++k) {
          if (z[k] > max) max = z[k], best = k;
        }
        std::vector<double> p(static_cast<size_t>(classes));
        double sum = 0;
        for (int64_t k = 0; k < classes; ++k) {
          sum += p[size_t(k)] = std::exp(double(z[k]) - max);
        }
        if (csv) {
          for (int64_t k = 0; k < classes; ++k)
            field("", Number(p[size_t(k)] / sum));
        } else {
          std::string list = "[";
          for (int64_t k = 0; k < classes; ++k) {
            StrAppend(&list, k ? "," : "", Number(p[size_t(k)] / sum));
          }
          field("probabilities", list + "]");
        }
        class_fields(best);
      } else {
        field("prediction", Number(z[0]));
      }
      out += csv ? "\n" : "}\n";
    }
    rows += batch.rows;
    if (output == "-" && out.size() > (1 << 20)) {
      DTF_RETURN_IF_ERROR(PrintStdout(out));
      out.clear();
    }
  }
  if (output == "-") return PrintStdout(out);
  // `output` is OutputTarget's already: the file itself, links followed.
  DTF_RETURN_IF_ERROR(WriteFileAtomically(output, out));
  ctx->console.Info(StrCat("scored ", rows, " records into ", f.output));
  return OkStatus();
}

}  // namespace

void SetupPredict(CLI::App* app, Context* ctx) {
  auto f = std::make_shared<PredictFlags>();
  CLI::App* sub = app->add_subcommand(
      "predict", "Score TFRecord shards with a model exported by `dtf train`");
  sub->add_option("--model", f->model,
                  "The exported model directory (<output_dir>/model)")
      ->required();
  sub->add_option("--input", f->input, "TFRecord files or glob patterns")
      ->required();
  sub->add_option("--format", f->format, "jsonl (default) or csv")
      ->check(CLI::IsMember({"jsonl", "csv"}));
  sub->add_option("--output", f->output,
                  "Write to this file (atomically; through a symlink to its "
                  "target) instead of stdout ('-')");
  sub->add_option("--keep", f->keep,
                  "Copy these columns of each record into the output (e.g. "
                  "an id)")
      ->delimiter(',');
  sub->add_option("--batch-size", f->batch_size, "Records per batch (1024)")
      ->check(IntAtLeast<int64_t>(1));
  sub->add_option("--threads", f->threads,
                  "Compute threads (default: 0, one per core)")
      ->check(IntAtLeast<int>(0));
  sub->callback([f, ctx] { ctx->status = RunPredict(*f, ctx); });
}

}  // namespace dtf::cli
