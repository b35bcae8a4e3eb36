// dtf init: a new job directory, from a CSV file or with a small synthetic
// data set, ready for gen-records and train.
#include <cerrno>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "cmd/app.h"
#include "lib/base/strings.h"
#include "lib/data/job_scaffold.h"

namespace dtf::cli {
namespace {

struct InitFlags {
  std::string dir;
  std::string from_csv;
  std::string eval_csv;
  std::string label;
  std::string delimiter = ",";
  std::string quote = "\"";
  bool no_trim = false;
  int64_t max_rows = ScaffoldOptions().max_rows;
};

StatusOr<char> OneChar(std::string_view flag, const std::string& value) {
  if (value == "\\t" || value == "tab") return '\t';
  if (value.size() != 1) {
    return InvalidArgumentError(StrCat(
        flag, " must be one character (or \"tab\"), got \"", value, "\""));
  }
  return value[0];
}

Status RunInit(const InitFlags& f) {
  ScaffoldOptions o;
  o.dir = f.dir;
  o.train_csv = f.from_csv;
  o.eval_csv = f.eval_csv;
  o.label = f.label;
  DTF_ASSIGN_OR_RETURN(o.csv.delimiter, OneChar("--delimiter", f.delimiter));
  DTF_ASSIGN_OR_RETURN(o.csv.quote, OneChar("--quote", f.quote));
  if (o.csv.quote == o.csv.delimiter) {
    return InvalidArgumentError("--delimiter and --quote must differ");
  }
  o.csv.trim_spaces = !f.no_trim;
  if (f.max_rows < 1) {
    return InvalidArgumentError("--max-rows must be at least 1");
  }
  o.max_rows = f.max_rows;
  DTF_ASSIGN_OR_RETURN(ScaffoldResult r, ScaffoldJob(o));
  std::string out = StrCat("Created ", f.dir,
                           f.from_csv.empty() ? " with a synthetic data set"
                                              : StrCat(" from ", f.from_csv),
                           ":\n");
  for (const std::string& file : r.files) StrAppend(&out, "  ", file, "\n");
  StrAppend(&out, "Next:\n  ",
            f.dir == "." ? "" : StrCat("cd ", ShellQuote(f.dir), " && "),
            "dtf gen-records --job dtf.toml && dtf train --job dtf.toml\n");
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
                                    "\"tab\" (default ,)");
  auto* quote =
      sub->add_option("--quote", f->quote, "Quote character (default \")");
  auto* no_trim = sub->add_flag("--no-trim", f->no_trim,
                                "Keep spaces around unquoted fields");
  auto* max_rows = sub->add_option(
      "--max-rows", f->max_rows,
      "Rows profiled per CSV file, the first ones (default 200000)");
  from_csv->needs(label);
  for (CLI::Option* o :
       {eval_csv, label, delimiter, quote, no_trim, max_rows}) {
    o->needs(from_csv);
  }
  sub->callback([f, ctx] { ctx->status = RunInit(*f); });
}

}  // namespace dtf::cli
