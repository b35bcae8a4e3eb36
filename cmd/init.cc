// dtf init: a new job directory, from a CSV file or with a small synthetic
// data set, ready for gen-records and train.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "cmd/app.h"
#include "lib/base/strings.h"
#include "lib/data/csv_sniff.h"
#include "lib/data/job_scaffold.h"
#include "lib/data/json.h"

namespace dtf::cli {
namespace {

struct InitFlags {
  std::string dir;
  std::string from_csv;
  std::string eval_csv;
  std::string label;
  std::string delimiter;  // empty: sniffed
  std::string quote = "\"";
  bool no_trim = false;
  int64_t max_rows = ScaffoldOptions().max_rows;
  bool json = false;
  std::string on_error = "fail";
};

StatusOr<char> OneChar(std::string_view flag, const std::string& value) {
  if (value == "\\t" || value == "tab") return '\t';
  if (value.size() != 1) {
    return InvalidArgumentError(StrCat(
        flag, " must be one character (or \"tab\"), got \"", value, "\""));
  }
  return value[0];
}

std::string Percent(int64_t n, int64_t total) {
  return fmt::format("{:.1f}%", total ? 100.0 * n / total : 0.0);
}

// The label's values and the table of columns, as text.
std::string SummaryText(const ScaffoldResult& r) {
  std::string out =
      StrCat("Read ", r.train_csv, ": ", r.rows, " rows, ", r.columns.size(),
             " columns, delimiter ", DelimiterFlag(r.delimiter),
             r.delimiter_sniffed ? " (detected)" : "", "\n");
  const ScaffoldLabel& l = r.label;
  StrAppend(&out, "Label \"", l.column, "\": ", l.task);
  if (l.task == "regression") {
    StrAppend(&out, ", ", l.rows, " values from ", FormatDouble(l.min), " to ",
              FormatDouble(l.max), ", mean ", fmt::format("{:.6g}", l.mean),
              "\n");
  } else {
    StrAppend(&out, ", ", l.classes.size(), " classes\n");
    for (const auto& [value, n] : l.classes) {
      StrAppend(&out, fmt::format("  {:<16} {:>10} {:>7}\n", value, n,
                                  Percent(n, l.rows)));
    }
  }
  size_t width = 6;
  for (const ScaffoldColumn& c : r.columns) {
    width = std::max(width, c.name.size());
  }
  StrAppend(&out, "Columns:\n",
            fmt::format("  {:<{}}  {:<5}  {:<15}  {}\n", "column", width,
                        "type", "feature", "note"));
  for (const ScaffoldColumn& c : r.columns) {
    std::string note = c.why;
    if (!c.note.empty()) StrAppend(&note, note.empty() ? "" : "; ", c.note);
    std::string line = fmt::format("  {:<{}}  {:<5}  {:<15}  {}", c.name, width,
                                   c.type, c.feature, note);
    while (line.back() == ' ') line.pop_back();
    StrAppend(&out, line, "\n");
  }
  return out;
}

std::string SummaryJson(const InitFlags& f, const ScaffoldResult& r) {
  const ScaffoldLabel& l = r.label;
  std::string classes;
  for (const auto& [value, n] : l.classes) {
    StrAppend(&classes, classes.empty() ? "" : ", ",
              "{\"value\": ", JsonString(value), ", \"count\": ", n,
              ", \"percent\": ",
              fmt::format("{:.2f}", l.rows ? 100.0 * n / l.rows : 0.0), "}");
  }
  std::string label =
      StrCat("{\"column\": ", JsonString(l.column),
             ", \"task\": ", JsonString(l.task), ", \"rows\": ", l.rows);
  if (l.task == "regression") {
    StrAppend(&label, ", \"min\": ", FormatDouble(l.min),
              ", \"max\": ", FormatDouble(l.max),
              ", \"mean\": ", FormatDouble(l.mean), "}");
  } else {
    StrAppend(&label, ", \"classes\": [", classes, "]}");
  }
  std::string columns;
  for (const ScaffoldColumn& c : r.columns) {
    StrAppend(&columns, columns.empty() ? "" : ", ",
              "{\"name\": ", JsonString(c.name),
              ", \"type\": ", JsonString(c.type),
              ", \"format\": ", JsonString(c.format),
              ", \"feature\": ", JsonString(c.feature),
              ", \"why\": ", JsonString(c.why),
              ", \"note\": ", JsonString(c.note), "}");
  }
  std::string files, missing;
  for (const std::string& file : r.files) {
    StrAppend(&files, files.empty() ? "" : ", ", JsonString(file));
  }
  for (const std::string& m : r.missing) {
    StrAppend(&missing, missing.empty() ? "" : ", ", JsonString(m));
  }
  return StrCat(
      "{\"dir\": ", JsonString(f.dir),
      ", \"train_csv\": ", JsonString(r.train_csv), ", \"rows\": ", r.rows,
      ", \"delimiter\": ", JsonString(std::string(1, r.delimiter)),
      ", \"delimiter_detected\": ", r.delimiter_sniffed ? "true" : "false",
      ", \"missing\": [", missing, "], \"label\": ", label, ", \"columns\": [",
      columns, "], \"files\": [", files, "]}\n");
}

Status RunInit(const InitFlags& f) {
  ScaffoldOptions o;
  o.dir = f.dir;
  o.train_csv = f.from_csv;
  o.eval_csv = f.eval_csv;
  o.label = f.label;
  if (!f.delimiter.empty()) {
    DTF_ASSIGN_OR_RETURN(o.csv.delimiter, OneChar("--delimiter", f.delimiter));
    o.sniff_delimiter = false;
  }
  DTF_ASSIGN_OR_RETURN(o.csv.quote, OneChar("--quote", f.quote));
  if (o.csv.quote == o.csv.delimiter) {
    return InvalidArgumentError("--delimiter and --quote must differ");
  }
  o.csv.trim_spaces = !f.no_trim;
  if (f.max_rows < 0) {
    return InvalidArgumentError("--max-rows must be 0 (every row) or more");
  }
  o.max_rows = f.max_rows;
  o.skip_missing_labels = f.on_error == "skip";
  DTF_ASSIGN_OR_RETURN(ScaffoldResult r, ScaffoldJob(o));
  for (const std::string& w : r.warnings) {
    std::fprintf(stderr, "dtf: warning: %s\n", w.c_str());
  }
  std::string out;
  if (f.json) {
    out = SummaryJson(f, r);
  } else {
    out = StrCat(SummaryText(r), "Created ", f.dir,
                 f.from_csv.empty() ? " with a synthetic data set"
                                    : StrCat(" from ", f.from_csv),
                 ":\n");
    for (const std::string& file : r.files) StrAppend(&out, "  ", file, "\n");
    StrAppend(&out, "Next:\n  ",
              f.dir == "." ? "" : StrCat("cd ", ShellQuote(f.dir), " && "),
              "dtf gen-records --job dtf.toml && dtf train --job dtf.toml\n");
  }
  std::fputs(out.c_str(), stdout);
  if (std::fflush(stdout) != 0) return ErrnoToStatus(errno, "<stdout>");
  return OkStatus();
}

}  // namespace

void SetupInit(CLI::App* app, Context* ctx) {
  auto f = std::make_shared<InitFlags>();
  CLI::App* sub = app->add_subcommand(
      "init",
      "Create a job directory (dtf.toml, profiles, README) from a CSV file, "
      "or with a small synthetic data set");
  sub->add_option("dir", f->dir, "The job directory (new, or empty)")
      ->required();
  auto* from_csv = sub->add_option(
      "--from-csv", f->from_csv,
      "Training CSV (with a header line) to profile and read the data from");
  auto* eval_csv = sub->add_option(
      "--eval-csv", f->eval_csv,
      "Evaluation CSV (default: the training CSV split 80/20 by hash)");
  auto* label = sub->add_option("--label", f->label,
                                "The label column (required with --from-csv)");
  auto* delimiter = sub->add_option("--delimiter", f->delimiter,
                                    "Field separator: one character or "
                                    "\"tab\" (default: detected among , ; "
                                    "tab |)");
  auto* quote =
      sub->add_option("--quote", f->quote, "Quote character (default \")");
  auto* no_trim = sub->add_flag("--no-trim", f->no_trim,
                                "Keep spaces around unquoted fields");
  auto* max_rows = sub->add_option(
      "--max-rows", f->max_rows,
      "Rows profiled per CSV file, the first ones (default 0: every row)");
  sub->add_flag("--json", f->json,
                "Print what init decided (label, columns) as JSON on stdout");
  auto* on_error =
      sub->add_option("--on-error", f->on_error,
                      "Rows without a label: fail (default) or skip (warn, "
                      "and leave them to gen-records --on-error skip)")
          ->check(CLI::IsMember({"fail", "skip"}));
  from_csv->needs(label);
  for (CLI::Option* o :
       {eval_csv, label, delimiter, quote, no_trim, max_rows, on_error}) {
    o->needs(from_csv);
  }
  sub->callback([f, ctx] { ctx->status = RunInit(*f); });
}

}  // namespace dtf::cli
