// dtf predict: score TFRecord shards with an exported model.
#include "cmd/predict.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cmd/app.h"
#include "cmd/cli_output.h"
#include "cmd/flags.h"
#include "cmd/output_file.h"
#include "cmd/remote_output.h"
#include "cmd/task_storage.h"
#include "lib/base/file.h"
#include "lib/base/storage.h"
#include "lib/base/storage_tree.h"
#include "lib/base/strings.h"
#include "lib/data/gen_records.h"
#include "lib/data/input_pipeline.h"
#include "lib/data/json.h"
#include "lib/kernels/activation.h"
#include "lib/kernels/context.h"
#include "lib/launch/batch/shards.h"
#include "lib/runtime/export/predictor.h"

namespace dtf::cli {
namespace {

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

// What scoring needs, loaded once: the model, the parse specs (--keep
// included) and the output's shape.
struct Scorer {
  explicit Scorer(runtime::Predictor p) : predictor(std::move(p)) {}

  runtime::Predictor predictor;
  InputPipelineOptions options;
  std::vector<std::string> keep;
  std::vector<std::string> names;
  int64_t classes = 0;
  bool csv = false;

  const ModelSpec& spec() const { return predictor.spec(); }
  std::string Header() const;
  // Appends a row per record of `options` (files, sharding) to `*out`;
  // `flush` may take what `*out` holds; `progress` hears the rows so far.
  Status Score(const InputPipelineOptions& options, Context* ctx,
               std::string* out, int64_t* rows,
               const std::function<Status(std::string*)>& flush,
               const std::function<void(int64_t)>& progress);
  // Appends the first `rows` records of a scored batch to `*out`.
  void Format(const Batch& batch, int64_t rows, const kernels::Tensor& logits,
              std::string* out) const;
};

StatusOr<Scorer> MakeScorer(const PredictFlags& f) {
  // A model in an object store is read from a local copy of it.
  LocalStagingDir copy;
  DTF_ASSIGN_OR_RETURN(const std::string model_dir,
                       LocalModelDir("--model", f.model, &copy));
  DTF_ASSIGN_OR_RETURN(runtime::Predictor predictor,
                       runtime::Predictor::Load(model_dir, f.threads));
  Scorer s(std::move(predictor));
  const Schema& schema = s.predictor.model().definition.schema;
  InputPipelineOptions& options = s.options;
  options.files = f.input;
  options.features = s.predictor.ParseSpecs();
  options.batch_size = f.batch_size;
  for (const std::string& name : f.keep) {
    const ColumnSpec* column = schema.FindColumn(name);
    if (column == nullptr) {
      return InvalidArgumentError(
          StrCat("--keep: the model's schema (", f.model,
                 "/model.toml) has no column \"", name, "\""));
    }
    bool parsed = false;
    for (const FeatureParseSpec& p : options.features) parsed |= p.name == name;
    if (parsed) continue;
    const FeatureType type =
        column->type == ValueType::kInt     ? FeatureType::kInt64
        : column->type == ValueType::kFloat ? FeatureType::kFloat
                                            : FeatureType::kBytes;
    options.features.push_back(VarLenFeature(name, type));
  }
  s.keep = f.keep;
  s.csv = f.format == "csv";
  s.classes = s.predictor.outputs();
  s.names = ClassNames(schema, s.classes);
  return s;
}

std::string Scorer::Header() const {
  if (!csv) return "";
  const std::string name_column = names.empty() ? "" : ",class_name";
  std::string out;
  for (const std::string& name : keep) StrAppend(&out, name, ",");
  if (spec().loss == Loss::kBinaryCrossentropy) {
    StrAppend(&out, "probability,class", name_column, "\n");
  } else if (spec().loss == Loss::kSoftmaxCrossentropy) {
    for (int64_t k = 0; k < classes; ++k) StrAppend(&out, "p", k, ",");
    StrAppend(&out, "class", name_column, "\n");
  } else {
    out += "prediction\n";
  }
  return out;
}

Status Scorer::Score(const InputPipelineOptions& options, Context* ctx,
                     std::string* out, int64_t* rows,
                     const std::function<Status(std::string*)>& flush,
                     const std::function<void(int64_t)>& progress) {
  return predictor.Run(options, ctx->cancel,
                       [&](const Batch& batch, int64_t batch_rows,
                           const kernels::Tensor& logits) -> Status {
                         Format(batch, batch_rows, logits, out);
                         *rows += batch_rows;
                         if (flush) DTF_RETURN_IF_ERROR(flush(out));
                         if (progress) progress(*rows);
                         return OkStatus();
                       });
}

void Scorer::Format(const Batch& batch, int64_t batch_rows,
                    const kernels::Tensor& logits, std::string* out_ptr) const {
  std::string& out = *out_ptr;
  const ModelSpec& spec = this->spec();
  runtime::RecordScore score;
  for (int64_t r = 0; r < batch_rows; ++r) {
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
    for (const std::string& name : keep) {
      field(name, KeptValue(*batch.Find(name), r, csv));
    }
    // The class id and, for a mapped label, its name.
    auto class_fields = [&](int64_t id) {
      field("class", StrCat(id));
      if (names.empty()) return;
      const std::string& name = names[static_cast<size_t>(id)];
      field("class_name", csv ? CsvCell(name) : JsonString(name));
    };
    predictor.Score(logits, r, &score);
    if (spec.loss == Loss::kBinaryCrossentropy) {
      field("probability", Number(score.probabilities[0]));
      class_fields(score.class_id);
    } else if (spec.loss == Loss::kSoftmaxCrossentropy) {
      if (csv) {
        for (double p : score.probabilities) field("", Number(p));
      } else {
        std::string list = "[";
        for (size_t k = 0; k < score.probabilities.size(); ++k) {
          StrAppend(&list, k ? "," : "", Number(score.probabilities[k]));
        }
        field("probabilities", list + "]");
      }
      class_fields(score.class_id);
    } else {
      field("prediction", Number(score.prediction));
    }
    out += csv ? "\n" : "}\n";
  }
}

Status RunPredict(const PredictFlags& f, Context* ctx) {
  // A target that cannot be written is refused before any work.
  DTF_ASSIGN_OR_RETURN(const std::string output,
                       OutputTarget("--output", f.output));
  DTF_ASSIGN_OR_RETURN(Scorer scorer, MakeScorer(f));
  std::string out = scorer.Header();
  int64_t rows = 0;
  auto flush = [&](std::string* text) -> Status {
    if (output != "-" || text->size() <= (1 << 20)) return OkStatus();
    DTF_RETURN_IF_ERROR(PrintStdout(*text));
    text->clear();
    return OkStatus();
  };
  DTF_RETURN_IF_ERROR(
      scorer.Score(scorer.options, ctx, &out, &rows, flush, nullptr));
  if (output == "-") return PrintStdout(out);
  // `output` is OutputTarget's already: the file itself, links followed.
  DTF_RETURN_IF_ERROR(WriteWholeFile(output, out));
  ctx->console.Info(StrCat("scored ", rows, " records into ", f.output));
  return OkStatus();
}

// One shard of `--profile`'s split (predict_shards.h): its rows to
// --output, and the index beside it.
// --hold-for-fetch: says the shard is ready (the last line of the task's
// output), then waits for `dtf task shard-release` to mark it fetched, at
// most f.hold_for_fetch seconds: a pod's files go with it when it exits.
Status HoldForFetch(const PredictFlags& f, const std::string& output,
                    int64_t rows, Context* ctx) {
  const std::string line = StrCat(launch::kShardReady, rows, "\n");
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
  const std::string fetched = launch::ShardFetchedPath(output);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(f.hold_for_fetch);
  while (!launch::ShardWasFetched(output)) {
    if (ctx->cancel != nullptr && ctx->cancel->load()) {
      return CancelledError(StrCat("shard ", f.shard, " of ", f.of,
                                   ": stopped before it was fetched"));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return DeadlineExceededError(
          StrCat("shard ", f.shard, " of ", f.of, ": not fetched within ",
                 f.hold_for_fetch, " s (--hold-for-fetch); ", output,
                 " is lost with this task (is the dtf predict that started it "
                 "gone?)"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return OkStatus();
}

Status RunPredictShard(const PredictFlags& f, Context* ctx) {
  if (f.output == "-") {
    return InvalidArgumentError("--shard: needs --output FILE");
  }
  DTF_ASSIGN_OR_RETURN(const std::string output,
                       OutputTarget("--output", f.output));
  DTF_ASSIGN_OR_RETURN(Scorer scorer, MakeScorer(f));
  DTF_ASSIGN_OR_RETURN(const std::vector<std::string> files,
                       PredictInputFiles(f.input));
  DTF_ASSIGN_OR_RETURN(
      const ShardAssignment assignment,
      AssignShard(static_cast<int64_t>(files.size()), f.shard, f.of));
  if (!f.ready_file.empty()) {
    DTF_RETURN_IF_ERROR(WriteFileAtomically(
        f.ready_file, StrCat("shard ", f.shard, " of ", f.of, "\n")));
  }
  using Clock = std::chrono::steady_clock;
  Clock::time_point last;
  int64_t before = 0;  // rows of the files done
  auto report = [&](int64_t rows, bool force) {
    const Clock::time_point now = Clock::now();
    if (!force && now - last < std::chrono::milliseconds(500)) return;
    last = now;
    const std::string line =
        StrCat(launch::kShardProgress, before + rows, "\n");
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
  };
  auto progress = [&](int64_t rows) { report(rows, false); };
  std::string out = scorer.Header();
  launch::ShardIndex index;
  index.inputs = static_cast<int64_t>(files.size());
  if (assignment.whole_files()) {
    for (int64_t position : assignment.files) {
      InputPipelineOptions options = scorer.options;
      options.files = {files[size_t(position)]};
      int64_t rows = 0;
      DTF_RETURN_IF_ERROR(
          scorer.Score(options, ctx, &out, &rows, nullptr, progress));
      index.files.emplace_back(position, rows);
      before += rows;
    }
    index.rows = before;
  } else {
    InputPipelineOptions options = scorer.options;
    options.reader_index = f.shard;
    options.reader_count = f.of;
    DTF_RETURN_IF_ERROR(
        scorer.Score(options, ctx, &out, &index.rows, nullptr, progress));
  }
  before = 0;
  report(index.rows, true);
  if (f.hold_for_fetch > 0) {
    // A mark left by an earlier shard written here would release this one
    // before anyone fetched it.
    std::error_code ec;
    std::filesystem::remove(launch::ShardFetchedPath(output), ec);
    if (ec) return ErrnoToStatus(ec.value(), launch::ShardFetchedPath(output));
  }
  DTF_RETURN_IF_ERROR(WriteFileAtomically(output, out));
  DTF_RETURN_IF_ERROR(WriteFileAtomically(launch::ShardIndexPath(output),
                                          launch::ShardIndexToText(index)));
  ctx->console.Info(StrCat("shard ", f.shard, " of ", f.of, ": scored ",
                           index.rows, " records into ", f.output));
  if (f.hold_for_fetch > 0) return HoldForFetch(f, output, index.rows, ctx);
  return OkStatus();
}

Status RunPredictCommand(PredictFlags f, Context* ctx) {
  if (!f.profile.empty()) return RunPredictOnProfile(f, ctx);
  if (!f.s3_credentials.empty()) {
    DTF_RETURN_IF_ERROR(ConfigureStorageFromTaskFile(f.s3_credentials));
  }
  if (!f.shard_from_env.empty()) {
    const char* value = std::getenv(f.shard_from_env.c_str());
    int shard = -1;
    const std::string_view text = value == nullptr ? "" : value;
    const auto [end, ec] =
        std::from_chars(text.data(), text.data() + text.size(), shard);
    if (value == nullptr || ec != std::errc() ||
        end != text.data() + text.size() || shard < 0) {
      return InvalidArgumentError(StrCat(
          "--shard-from-env ", f.shard_from_env, ": ",
          value == nullptr ? std::string("not set")
                           : StrCat("\"", text, "\" is not a shard number")));
    }
    f.shard = shard;
  }
  if (f.of > 0 && f.shard < 0) {
    return InvalidArgumentError(
        "--of: needs --shard K or --shard-from-env NAME");
  }
  if (f.hold_for_fetch > 0 && f.of == 0) {
    return InvalidArgumentError(
        "--hold-for-fetch: needs --shard or "
        "--shard-from-env, and --of");
  }
  if (f.of > 0) {
    if (f.shard >= f.of) {
      return InvalidArgumentError(StrCat("--shard ", f.shard, " --of ", f.of,
                                         ": the shard must be below --of"));
    }
    return RunPredictShard(f, ctx);
  }
  return RunPredict(f, ctx);
}

}  // namespace

StatusOr<std::vector<std::string>> PredictInputFiles(
    const std::vector<std::string>& patterns) {
  DTF_ASSIGN_OR_RETURN(std::vector<std::string> files, ExpandInputs(patterns));
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  // A pattern without wildcards stands for itself: it must exist.
  for (const std::string& file : files) {
    if (IsRemotePath(file)) {
      DTF_RETURN_IF_ERROR(StatFile(file).status());
      continue;
    }
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) {
      return ErrnoToStatus(ec ? ec.value() : ENOENT, file);
    }
  }
  return files;
}

Status CheckPredictModel(const PredictFlags& f) {
  return MakeScorer(f).status();
}

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
  sub->add_option("--profile", f->profile,
                  "Split the input over this launch profile's workers and "
                  "merge their outputs (needs --output FILE)");
  auto* workers =
      sub->add_option("--workers", f->workers,
                      "With --profile: the number of shards (default: the "
                      "profile's workers)")
          ->check(IntAtLeast<int>(1));
  auto* runs_dir =
      sub->add_option("--runs-dir", f->runs_dir,
                      "With --profile: where the run's directory goes (default "
                      ".dtf/runs, or a Slurm profile's slurm.run_dir)");
  auto* shard = sub->add_option("--shard", f->shard,
                                "Score only shard K of --of W (what each "
                                "task of --profile runs)")
                    ->check(IntAtLeast<int>(0));
  auto* of = sub->add_option("--of", f->of, "The shard count of --shard")
                 ->check(IntAtLeast<int>(1));
  auto* ready = sub->add_option("--ready-file", f->ready_file,
                                "With --shard: written once scoring starts");
  sub->add_option("--s3-credentials", f->s3_credentials,
                  "A task of a --profile run: the run's S3 settings and "
                  "credentials (a 0600 file)");
  auto* from_env =
      sub->add_option("--shard-from-env", f->shard_from_env,
                      "Take --shard from this environment variable (a "
                      "Kubernetes pod's JOB_COMPLETION_INDEX)");
  auto* hold = sub->add_option("--hold-for-fetch", f->hold_for_fetch,
                               "With --shard: once scored, wait at most this "
                               "many seconds for `dtf task shard-release`")
                   ->check(IntAtLeast<int>(1));
  sub->add_option("--render", f->render_dir,
                  "With a Kubernetes --profile: write the run's manifests "
                  "into this directory and start nothing");
  shard->needs(of);
  from_env->needs(of);
  from_env->excludes(shard);
  hold->needs(of);
  ready->needs(shard);
  workers->needs("--profile");
  runs_dir->needs("--profile");
  shard->excludes("--profile");
  from_env->excludes("--profile");
  sub->callback([f, ctx] { ctx->status = RunPredictCommand(*f, ctx); });
}

}  // namespace dtf::cli
