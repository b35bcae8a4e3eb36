// dtf gen-records: CSV -> sharded TFRecord files of tf.train.Example.
#include "lib/data/gen_records.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cmd/app.h"
#include "cmd/cli_output.h"
#include "cmd/flags.h"
#include "cmd/gen_records.h"
#include "cmd/progress.h"
#include "cmd/task_storage.h"
#include "lib/base/file.h"
#include "lib/base/storage.h"
#include "lib/base/strings.h"
#include "lib/data/csv_sniff.h"
#include "lib/data/job_file.h"
#include "lib/data/json.h"

namespace dtf::cli {
namespace {

struct GenRecordsFlags {
  std::string job;
  std::string schema;
  bool infer = false;
  std::string out;
  std::vector<std::string> inputs;
  bool no_header = false;
  std::string delimiter;  // empty: detected with --infer, else ","
  std::string quote = "\"";
  bool no_trim = false;
  std::vector<std::string> missing;
  std::string label;
  int64_t infer_rows = 100000;
  int shards = 0;  // 0: the job's, else 1
  std::string shard_key;
  std::string split;
  std::string compression;  // empty: the job's, else none
  int threads = 0;          // 0: one per core
  bool index = false;
  std::string on_error = "fail";
  bool overwrite = false;
  std::string schema_out;
  bool json = false;
  // Spread over a profile's workers (cmd/gen_records.h).
  std::string profile;
  int workers = 0;
  std::string runs_dir;
  // One task of such a run: part `part` of `of`, into `stage_dir`.
  int part = -1;
  int of = 0;
  std::string stage_dir;
  std::string ready_file;      // written once it has started: "part K of W"
  std::string s3_credentials;  // the run's S3 settings (task_storage.h)
};

// What each task of a run spread over a profile gets from these flags.
std::vector<std::string> TaskFlags(const GenRecordsFlags& f) {
  std::vector<std::string> out = {"--on-error", f.on_error};
  if (f.shards > 0)
    out.insert(out.end(), {"--shards", std::to_string(f.shards)});
  if (!f.compression.empty()) {
    out.insert(out.end(), {"--compression", f.compression});
  }
  if (f.threads > 0) {
    out.insert(out.end(), {"--threads", std::to_string(f.threads)});
  }
  if (f.index) out.push_back("--index");
  return out;
}

StatusOr<char> OneChar(std::string_view flag, const std::string& value) {
  if (value == "\\t" || value == "tab") return '\t';
  if (value.size() != 1) {
    return InvalidArgumentError(StrCat(
        flag, " must be one character (or \"tab\"), got \"", value, "\""));
  }
  return value[0];
}

StatusOr<std::vector<SplitFraction>> ParseSplit(std::string_view spec) {
  std::vector<SplitFraction> splits;
  while (!spec.empty()) {
    size_t comma = spec.find(',');
    std::string_view part = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? "" : spec.substr(comma + 1);
    size_t eq = part.find('=');
    SplitFraction s;
    std::string number(eq == std::string_view::npos ? "" : part.substr(eq + 1));
    char* end = nullptr;
    if (eq != std::string_view::npos)
      s.fraction = std::strtod(number.c_str(), &end);
    if (eq == std::string_view::npos || number.empty() || *end != '\0') {
      return InvalidArgumentError(
          StrCat("--split: expected NAME=FRACTION, got \"", part, "\""));
    }
    s.name = std::string(part.substr(0, eq));
    splits.push_back(std::move(s));
  }
  return splits;
}

// Options for a run over files given on the command line.
StatusOr<GenRecordsOptions> OptionsFromFlags(const GenRecordsFlags& f) {
  GenRecordsOptions o;
  o.inputs = f.inputs;
  o.header = !f.no_header;
  DTF_ASSIGN_OR_RETURN(o.csv.quote, OneChar("--quote", f.quote));
  o.csv.trim_spaces = !f.no_trim;
  // With --infer the first file's delimiter is detected unless given; a
  // header read as one column that holds another delimiter is an error.
  std::error_code ec;
  const bool file = !o.inputs.empty() && o.inputs[0] != "-" &&
                    ((IsRemotePath(o.inputs[0]) &&
                      o.inputs[0].find_first_of("*?[") == std::string::npos) ||
                     std::filesystem::is_regular_file(o.inputs[0], ec));
  if (!f.delimiter.empty()) {
    DTF_ASSIGN_OR_RETURN(o.csv.delimiter, OneChar("--delimiter", f.delimiter));
  } else if (f.infer && file) {
    DTF_ASSIGN_OR_RETURN(o.csv.delimiter, SniffDelimiter(o.inputs[0]));
  }
  if (file && o.header) {
    DTF_ASSIGN_OR_RETURN(std::vector<std::string> header,
                         ReadCsvHeader(o.inputs[0], o.csv));
    DTF_RETURN_IF_ERROR(CheckHeaderSplit(o.inputs[0], header, o.csv.delimiter));
  }
  if (!f.schema.empty()) {
    DTF_ASSIGN_OR_RETURN(Schema schema, LoadSchemaFile(f.schema));
    schema.missing_values.insert(schema.missing_values.end(), f.missing.begin(),
                                 f.missing.end());
    o.schema = std::move(schema);
  } else {
    o.infer_missing = f.missing;
    o.infer_label = f.label;
    o.infer_rows = f.infer_rows;
  }
  o.out_dir = f.out;
  o.shards = f.shards > 0 ? f.shards : 1;
  o.shard_key = f.shard_key;
  if (!f.split.empty()) {
    DTF_ASSIGN_OR_RETURN(o.splits, ParseSplit(f.split));
  }
  if (!f.compression.empty()) {
    DTF_ASSIGN_OR_RETURN(o.compression, ParseCompression(f.compression));
  }
  return o;
}

std::string ResultJson(const std::vector<GenRecordsResult>& results) {
  int64_t read = 0, written = 0, skipped = 0;
  uint64_t bytes_in = 0, bytes_out = 0;
  double seconds = 0;
  std::string files, rejected;
  for (const GenRecordsResult& r : results) {
    read += r.rows_read;
    written += r.rows_written;
    skipped += r.rows_skipped;
    bytes_in += r.bytes_read;
    seconds += r.seconds;
    for (const auto& o : r.outputs) {
      bytes_out += o.bytes;
      StrAppend(&files, files.empty() ? "" : ", ",
                "{\"split\": ", JsonString(o.split),
                ", \"path\": ", JsonString(o.path),
                ", \"records\": ", o.records, ", \"bytes\": ", o.bytes, "}");
    }
    for (const RejectedRow& j : r.rejected) {
      StrAppend(&rejected, rejected.empty() ? "" : ", ",
                "{\"source\": ", JsonString(j.source), ", \"line\": ", j.line,
                ", \"error\": ", JsonString(j.error), "}");
    }
  }
  return StrCat("{\"rows_read\": ", read, ", \"rows_written\": ", written,
                ", \"rows_skipped\": ", skipped, ", \"bytes_read\": ", bytes_in,
                ", \"bytes_written\": ", bytes_out, ", \"seconds\": ", seconds,
                ", \"outputs\": [", files, "], \"rejected\": [", rejected,
                "]}\n");
}

void PrintSummary(const Console& console, const GenRecordsOptions& o,
                  const GenRecordsResult& r) {
  uint64_t bytes_out = 0;
  for (const auto& f : r.outputs) bytes_out += f.bytes;
  double secs = r.seconds > 0 ? r.seconds : 1e-9;
  console.Info(StrCat(
      "gen-records: ", r.rows_written, " rows -> ", r.outputs.size(),
      " files in ", o.out_dir, " (", HumanBytes(bytes_out), ") in ",
      fmt::format("{:.2f}", r.seconds), " s, ", HumanCount(r.rows_read / secs),
      " rows/s, ", HumanBytes(r.bytes_read / secs), "/s",
      r.rows_skipped ? StrCat("; skipped ", r.rows_skipped, " rows") : ""));
  constexpr size_t kShown = 10;
  for (size_t i = 0; i < r.rejected.size() && i < kShown; ++i) {
    console.Info(StrCat("  skipped ", r.rejected[i].error));
  }
  if (r.rows_skipped > static_cast<int64_t>(kShown)) {
    console.Info(StrCat("  ... and ", r.rows_skipped - kShown,
                        " more (--json lists the first ",
                        GenRecordsResult::kMaxRejectedKept, ")"));
  }
}

Status RunGenRecords(const GenRecordsFlags& f, Context* ctx) {
  if (!f.profile.empty()) {
    if (f.job.empty()) {
      return InvalidArgumentError(
          "--profile: give --job FILE (the tasks convert the job's sources)");
    }
    GenRecordsOnProfile g;
    g.job = f.job;
    g.profile = f.profile;
    g.workers = f.workers;
    g.runs_dir = f.runs_dir;
    g.overwrite = f.overwrite;
    g.task_flags = TaskFlags(f);
    return RunGenRecordsOnProfile(g, ctx);
  }
  const bool part = f.of > 0;
  if (part &&
      (f.job.empty() || f.stage_dir.empty() || f.part < 0 || f.part >= f.of)) {
    return InvalidArgumentError(StrCat(
        "--part ", f.part, " --of ", f.of,
        ": a part of a spread run needs --job, --stage-dir and 0 <= --part < "
        "--of"));
  }
  if (!f.s3_credentials.empty()) {
    DTF_RETURN_IF_ERROR(ConfigureStorageFromTaskFile(f.s3_credentials));
  }
  if (part && !f.ready_file.empty()) {
    DTF_RETURN_IF_ERROR(WriteFileAtomically(
        f.ready_file, StrCat("part ", f.part, " of ", f.of, "\n")));
  }
  std::vector<GenRecordsOptions> runs;
  if (!f.job.empty()) {
    DTF_ASSIGN_OR_RETURN(JobFile job, LoadJobFile(f.job));
    runs = GenRecordsOptionsFromJob(job);
    if (runs.empty()) {
      return InvalidArgumentError(
          StrCat(f.job, ": [data] names no csv sources"));
    }
  } else {
    if (f.schema.empty() && !f.infer) {
      return InvalidArgumentError(
          "give --schema FILE, --infer or --job FILE to say what the columns "
          "are");
    }
    if (f.out.empty()) return InvalidArgumentError("--out DIR is required");
    DTF_ASSIGN_OR_RETURN(GenRecordsOptions o, OptionsFromFlags(f));
    if (o.inputs.empty()) o.inputs.push_back("-");
    runs.push_back(std::move(o));
  }
  OnError on_error;
  if (f.on_error == "fail") {
    on_error = OnError::kFail;
  } else if (f.on_error == "skip") {
    on_error = OnError::kSkip;
  } else {
    return InvalidArgumentError(
        StrCat("--on-error must be fail or skip, got \"", f.on_error, "\""));
  }
  int threads =
      f.threads > 0
          ? f.threads
          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // A job's sources go into place together: a failed one leaves no output
  // of the others either.
  StagedRecords staged;
  std::vector<GenRecordsResult> results;
  for (GenRecordsOptions& o : runs) {
    o.threads = threads;
    o.on_error = on_error;
    o.overwrite = f.overwrite;
    o.write_index = f.index;
    o.cancel = ctx->cancel;
    if (part) {
      o.out_dir = StrCat(f.stage_dir, "/", &o - runs.data());
      o.part = f.part;
      o.parts = f.of;
      o.overwrite = true;
    }
    if (!f.job.empty()) {
      if (f.shards > 0) o.shards = f.shards;
      if (!f.compression.empty()) {
        DTF_ASSIGN_OR_RETURN(o.compression, ParseCompression(f.compression));
      }
    }
    ProgressBar bar(ctx->console, "gen-records");
    o.progress = [&bar](const GenRecordsProgress& p) {
      bar.Update(p.bytes_read, p.bytes_total, p.rows);
    };
    DTF_ASSIGN_OR_RETURN(GenRecordsResult r, staged.Stage(o));
    bar.Finish();
    results.push_back(std::move(r));
  }
  DTF_RETURN_IF_ERROR(staged.Commit());
  if (!f.json) {
    for (size_t i = 0; i < runs.size(); ++i) {
      PrintSummary(ctx->console, runs[i], results[i]);
    }
  }
  if (!f.schema_out.empty()) {
    DTF_RETURN_IF_ERROR(
        WriteFileAtomically(f.schema_out, SchemaToToml(results[0].schema)));
  }
  if (f.json) return PrintStdout(ResultJson(results));
  return OkStatus();
}

}  // namespace

void SetupGenRecords(CLI::App* app, Context* ctx) {
  auto f = std::make_shared<GenRecordsFlags>();
  CLI::App* sub =
      app->add_subcommand("gen-records",
                          "Convert CSV files to sharded TFRecord files of "
                          "tf.train.Example");
  auto* job = sub->add_option("--job", f->job,
                              "Convert the CSV sources the job file names");
  auto* schema = sub->add_option("--schema", f->schema,
                                 "TOML file whose [schema] table describes "
                                 "the columns");
  auto* infer = sub->add_flag("--infer", f->infer,
                              "Infer column types from the data (int, then "
                              "float, then str)");
  auto* out = sub->add_option("--out", f->out, "Output directory");
  sub->add_option("--shards", f->shards, "Output files per split (default 1)")
      ->check(IntAtLeast<int>(1));
  auto* no_header =
      sub->add_flag("--no-header", f->no_header,
                    "The CSV has no header line; schema columns are the CSV's "
                    "columns in order");
  auto* delimiter = sub->add_option("--delimiter", f->delimiter,
                                    "Field separator: one character or "
                                    "\"tab\" (default ,; with --infer: "
                                    "detected among , ; tab |)");
  auto* quote =
      sub->add_option("--quote", f->quote, "Quote character (default \")");
  auto* no_trim = sub->add_flag("--no-trim", f->no_trim,
                                "Keep spaces around unquoted fields");
  auto* missing = sub->add_option("--missing", f->missing,
                                  "A cell text meaning missing, besides the "
                                  "empty cell (repeatable)");
  auto* label =
      sub->add_option("--label", f->label, "With --infer: the label column");
  auto* infer_rows = sub->add_option(
      "--infer-rows", f->infer_rows,
      "With --infer: rows to infer from (0: the whole first input; default "
      "100000)");
  auto* shard_key = sub->add_option("--shard-key", f->shard_key,
                                    "Column whose hash picks the shard "
                                    "(default round robin)");
  auto* split = sub->add_option("--split", f->split,
                                "Hash split, e.g. train=0.8,eval=0.2");
  sub->add_option("--compression", f->compression,
                  "none, gzip or zlib (default none)")
      ->check(CLI::IsMember({"none", "gzip", "zlib"}));
  sub->add_option("--threads", f->threads,
                  "Encoding threads (default: one per core)")
      ->check(IntAtLeast<int>(1));
  sub->add_flag("--index", f->index,
                "Write an index file (offset length per record) beside each "
                "uncompressed shard");
  sub->add_option("--on-error", f->on_error,
                  "fail (default) or skip rows that do not fit the schema")
      ->check(CLI::IsMember({"fail", "skip"}));
  sub->add_flag("--overwrite", f->overwrite,
                "Replace shards already in the output directory");
  sub->add_option("--schema-out", f->schema_out,
                  "Write the schema used (inferred or given) as TOML");
  sub->add_flag("--json", f->json, "Print the summary as JSON on stdout");
  auto* profile = sub->add_option(
      "--profile", f->profile,
      "With --job: spread the conversion over this profile's workers (its "
      "backend's tasks must share this machine's files: local, slurm, "
      "spark); the same files as without it");
  sub->add_option("--workers", f->workers,
                  "With --profile: tasks to spread over (default: the "
                  "profile's workers)")
      ->check(IntAtLeast<int>(1))
      ->needs(profile);
  sub->add_option("--runs-dir", f->runs_dir,
                  "With --profile: where the run's directory goes (default: "
                  "the profile's run_dir, else the job's .dtf/runs)")
      ->needs(profile);
  auto* part = sub->add_option("--part", f->part,
                               "A task of a --profile run: the part it "
                               "writes (its shards: number % --of == part)");
  auto* of = sub->add_option("--of", f->of, "A task of a --profile run: parts")
                 ->check(IntAtLeast<int>(1));
  auto* stage_dir =
      sub->add_option("--stage-dir", f->stage_dir,
                      "A task of a --profile run: where it writes its shards");
  auto* ready = sub->add_option(
      "--ready-file", f->ready_file,
      "A task of a --profile run: the file it writes once it has started");
  ready->needs(of);
  sub->add_option("--s3-credentials", f->s3_credentials,
                  "A task of a --profile run: the run's S3 settings and "
                  "credentials (a 0600 file)");
  part->needs(of);
  of->needs(part);
  stage_dir->needs(of);
  profile->excludes(part);
  auto* inputs = sub->add_option("files", f->inputs,
                                 "CSV files or globs ('-' or none: stdin)");
  schema->excludes(infer);
  for (CLI::Option* o :
       {schema, infer, out, no_header, delimiter, quote, no_trim, missing,
        label, infer_rows, shard_key, split, inputs}) {
    job->excludes(o);
  }
  label->needs(infer);
  infer_rows->needs(infer);
  sub->callback([f, ctx] { ctx->status = RunGenRecords(*f, ctx); });
}

}  // namespace dtf::cli
