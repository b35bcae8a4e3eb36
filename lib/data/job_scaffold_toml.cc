#include "lib/data/job_scaffold_toml.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <filesystem>
#include <map>
#include <system_error>
#include <utility>

#include "lib/base/strings.h"
#include "lib/base/toml_text.h"
#include "lib/data/column_plan.h"
#include "lib/data/date_parse.h"

namespace dtf {
namespace {

namespace fs = std::filesystem;
using toml_util::Quote;

// TF's rule of thumb for embedding sizes: about the fourth root of the
// number of ids, scaled, within [4, 16].
int64_t EmbeddingSize(size_t ids) {
  double d = 4 * std::pow(static_cast<double>(ids), 0.25);
  return std::clamp<int64_t>(std::llround(d), 4, 16);
}

// An int label with values in [0, kMaxClasses) names classes; other numbers
// are a regression target.
constexpr double kMaxClasses = 50;

std::string Number(double v) {
  if (v == std::floor(v) && std::abs(v) < 1e15) {
    return StrCat(static_cast<int64_t>(v), ".0");
  }
  return fmt::format("{:.6g}", v);
}

// Text of `p` for the job file: relative to the job directory, except that
// an absolute path outside the job directory stays absolute (not
// "../../../data/train.csv").
std::string PathFromJob(const std::string& p, const std::string& dir) {
  std::error_code ec;
  fs::path abs = fs::absolute(p, ec);
  fs::path rel = fs::relative(abs, fs::absolute(dir, ec), ec);
  if (ec || rel.empty()) return abs.string();
  if (fs::path(p).is_absolute() && *rel.begin() == "..") return p;
  return rel.string();
}

// The label's values, in order, and the texts mapping to each: an eval
// file's "X." (UCI Adult's test labels) reads as the training file's "X".
struct LabelValues {
  std::vector<std::string> values;
  std::map<std::string, int64_t> mapping;
};

LabelValues CollectLabel(const ColumnProfile& train,
                         const ColumnProfile* eval) {
  LabelValues out;
  for (const auto& [value, count] : train.counts) out.values.push_back(value);
  for (const auto& [value, count] : train.na_counts)
    out.values.push_back(value);
  std::sort(out.values.begin(), out.values.end());
  for (size_t i = 0; i < out.values.size(); ++i) {
    out.mapping[out.values[i]] = static_cast<int64_t>(i);
  }
  if (eval) {
    std::map<std::string, int64_t> sorted(eval->counts.begin(),
                                          eval->counts.end());
    sorted.insert(eval->na_counts.begin(), eval->na_counts.end());
    for (const auto& [value, count] : sorted) {
      if (out.mapping.count(value)) continue;
      std::string trimmed = value;
      while (!trimmed.empty() &&
             (trimmed.back() == '.' || trimmed.back() == ' '))
        trimmed.pop_back();
      auto it = out.mapping.find(trimmed);
      if (it != out.mapping.end()) {
        out.mapping[value] = it->second;
      } else {
        out.mapping[value] = static_cast<int64_t>(out.values.size());
        out.values.push_back(value);
      }
    }
  }
  return out;
}

// Vocabulary, most frequent first (ties by value): the column's values and
// the NA spellings it holds that the schema does not read as missing.
std::vector<std::string> Vocabulary(const ColumnProfile& c,
                                    const std::vector<std::string>& missing) {
  std::vector<std::pair<int64_t, std::string>> by_count;
  for (const auto& [v, n] : c.counts) by_count.push_back({-n, v});
  for (const auto& [v, n] : c.na_counts) {
    if (std::find(missing.begin(), missing.end(), v) == missing.end()) {
      by_count.push_back({-n, v});
    }
  }
  std::sort(by_count.begin(), by_count.end());
  std::vector<std::string> out;
  for (auto& [n, v] : by_count) out.push_back(v);
  return out;
}

std::string QuotedList(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    StrAppend(&out, i ? ", " : "", Quote(items[i]));
  }
  return out + "]";
}

// The eval CSV must name the training CSV's columns, in order.
Status CheckSameHeader(const ScaffoldOptions& o,
                       const std::vector<ColumnProfile>& train,
                       const std::vector<ColumnProfile>& eval) {
  const size_t n = std::min(train.size(), eval.size());
  for (size_t i = 0; i < n; ++i) {
    if (train[i].name == eval[i].name) continue;
    return InvalidArgumentError(
        StrCat(o.eval_csv, ":1:", eval[i].header_column, ": column ", i + 1,
               " is \"", eval[i].name, "\" but in ", o.train_csv,
               ":1:", train[i].header_column, " it is \"", train[i].name,
               "\"; the eval CSV needs the training CSV's header"));
  }
  if (eval.size() < train.size()) {
    return InvalidArgumentError(StrCat(
        o.eval_csv, ":1: no column \"", train[n].name, "\" (", o.train_csv,
        ":1:", train[n].header_column, "); the header ends after ", n,
        " columns; the eval CSV needs the training CSV's header"));
  }
  if (eval.size() > train.size()) {
    return InvalidArgumentError(
        StrCat(o.eval_csv, ":1:", eval[n].header_column, ": extra column \"",
               eval[n].name, "\", not in ", o.train_csv,
               "'s header; the eval CSV needs the training CSV's header"));
  }
  return OkStatus();
}

// Rows whose label is missing: an empty cell or a missing token, or an NA
// spelling in a numeric label (in a str label "None" may be a class).
Status CheckLabelPresent(const std::string& path, const ColumnProfile& label,
                         bool numeric) {
  int64_t line = label.first_missing_line;
  int64_t rows = label.missing;
  if (numeric && label.first_na_line != 0) {
    line =
        line == 0 ? label.first_na_line : std::min(line, label.first_na_line);
    rows += label.na();
  }
  if (line == 0) return OkStatus();
  return InvalidArgumentError(
      StrCat(path, ":", line, ": no label: column \"", label.name,
             "\" is missing on this row (", rows, rows == 1 ? " row" : " rows",
             " in all); remove the rows without a label, or fill them in"));
}

// The type and format of a column read from both CSVs: the training CSV's
// plan when the eval CSV reads under it too, else the eval CSV's when the
// training CSV does, else str.
void MergeEvalColumn(const ColumnProfile& train, const ColumnProfile& eval,
                     const PlanOptions& po, ColumnPlan* p) {
  ColumnPlan e = PlanColumn(eval, po);
  for (std::string& na : e.na_missing) {
    if (std::find(p->na_missing.begin(), p->na_missing.end(), na) ==
        p->na_missing.end()) {
      p->na_missing.push_back(na);
    }
  }
  if (p->type == ValueType::kString || eval.values == 0) return;
  ColumnFormat format;
  if (ReadsAs(eval, p->format)) {
    format = p->format;
  } else if (e.type != ValueType::kString && ReadsAs(train, e.format)) {
    format = e.format;
    p->note = e.note;
  } else {
    p->type = ValueType::kString;
    p->format = ColumnFormat::kPlain;
    p->kind = p->kind == PlannedFeature::kNone ? PlannedFeature::kNone
              : train.distinct <= kMaxVocabulary && !train.counts_capped
                  ? PlannedFeature::kCategorical
                  : PlannedFeature::kHashed;
    p->bucketize = false;
    p->na_missing.clear();
    p->note =
        "read as text: the eval CSV's values are not numbers the training "
        "CSV's are read as";
    return;
  }
  p->format = format;
  p->type = ReadsAsInt(train, format) && ReadsAsInt(eval, format)
                ? ValueType::kInt
                : ValueType::kFloat;
}

std::string ColumnEntry(const ColumnPlan& p) {
  if (p.format == ColumnFormat::kPlain) {
    return Quote(StrCat(p.name, ":", ValueTypeName(p.type)));
  }
  return StrCat("{ name = ", Quote(p.name),
                ", type = ", Quote(ValueTypeName(p.type)),
                ", format = ", Quote(ColumnFormatName(p.format)), " }");
}

std::string FeatureToml(const ColumnProfile& c, const ColumnPlan& p,
                        const std::vector<std::string>& missing) {
  std::string f;
  switch (p.kind) {
    case PlannedFeature::kNone:
      break;
    case PlannedFeature::kNumeric: {
      StrAppend(&f, "\n[[features.numeric]]\nname = ", Quote(c.name),
                "\nnormalize = true\n");
      if (c.cells() > c.values)
        StrAppend(&f, "default = ", Number(p.mean), "\n");
      if (!p.bucketize) break;
      std::string list;
      double last = 0;
      for (double b : p.deciles) {
        if (!list.empty() && b <= last) continue;
        StrAppend(&list, list.empty() ? "" : ", ", Number(b));
        last = b;
      }
      StrAppend(&f, "\n[[features.bucketized]]\nname = ",
                Quote(StrCat(c.name, "_buckets")), "\nsource = ", Quote(c.name),
                "\nboundaries = [", list, "]\nwide = true\n");
      break;
    }
    case PlannedFeature::kCategorical: {
      std::vector<std::string> vocabulary = Vocabulary(c, missing);
      StrAppend(&f, "\n[[features.categorical]]\nname = ", Quote(c.name),
                "\nvocabulary = ", QuotedList(vocabulary),
                "\nnum_oov_buckets = 1\nembedding = ",
                EmbeddingSize(vocabulary.size() + 1), "\nwide = true\n");
      break;
    }
    case PlannedFeature::kDate: {
      StrAppend(&f, "\n[[features.date]]\nname = ", Quote(c.name),
                "\nformat = ", Quote(DateFormatName(p.date_format)),
                p.date_has_time ? ""
                                : "\nparts = [\"year\", \"month\", \"day\", "
                                  "\"weekday\", \"epoch_days\"]",
                "\nembedding = 4\nwide = true\n",
                // An empty cell, here or in the eval CSV, reads as this one.
                "default = ", Quote(p.date_default), "\n");
      break;
    }
    case PlannedFeature::kText:
      StrAppend(&f, "\n[[features.text]]\nname = ", Quote(c.name),
                "\nbuckets = 10000\nngrams = 2\nembedding = 16\nwide = true\n");
      break;
    case PlannedFeature::kHashed: {
      const size_t buckets = std::bit_ceil(
          std::min<size_t>(2 * static_cast<size_t>(c.distinct), 4096));
      StrAppend(&f, "\n[[features.hashed]]\nname = ", Quote(c.name),
                "\nbuckets = ", buckets,
                "\nembedding = ", EmbeddingSize(buckets), "\nwide = true\n");
      break;
    }
  }
  return f;
}

ScaffoldColumn Reported(const ColumnPlan& p) {
  ScaffoldColumn r;
  r.name = p.name;
  r.type = std::string(ValueTypeName(p.type));
  r.format = std::string(ColumnFormatName(p.format));
  r.feature = std::string(PlannedFeatureName(p.kind));
  if (p.bucketize) r.feature += "+buckets";
  r.why = p.why;
  r.note = p.note;
  return r;
}

// Most frequent first, ties by value.
void SortClasses(std::vector<std::pair<std::string, int64_t>>* classes) {
  std::sort(classes->begin(), classes->end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
}

// The label: its loss (and classes) and the summary shown to the user.
struct LabelChoice {
  std::string loss = "binary_crossentropy";
  int64_t classes = 0;  // softmax only
  std::string schema_line;
};

StatusOr<LabelChoice> ChooseLabel(const ScaffoldOptions& o,
                                  const ColumnProfile& label,
                                  const ColumnProfile* eval_label,
                                  const ColumnPlan& plan,
                                  ScaffoldLabel* summary) {
  LabelChoice out;
  summary->column = label.name;
  summary->rows =
      label.values + (plan.type == ValueType::kString ? label.na() : 0);
  for (const auto& [value, count] : label.counts) {
    summary->classes.push_back({value, count});
  }
  if (plan.type == ValueType::kString) {
    for (const auto& [value, count] : label.na_counts) {
      summary->classes.push_back({value, count});
    }
  }
  SortClasses(&summary->classes);
  if (plan.type == ValueType::kString) {
    if (label.counts_capped) {
      return InvalidArgumentError(
          StrCat(o.train_csv, ": label column \"", label.name,
                 "\" has more than ", ColumnProfile::kMaxLabelCounted,
                 " distinct texts; a regression target must be numbers"));
    }
    LabelValues lv = CollectLabel(label, eval_label);
    out.schema_line =
        StrCat("label = { column = ", Quote(label.name), ", map = { ");
    bool first = true;
    for (const auto& [text, id] : lv.mapping) {
      StrAppend(&out.schema_line, first ? "" : ", ", Quote(text), " = ", id);
      first = false;
    }
    StrAppend(&out.schema_line, " } }\n");
    if (lv.values.size() > 2) {
      out.loss = "softmax_crossentropy";
      out.classes = static_cast<int64_t>(lv.values.size());
    }
    summary->task = lv.values.size() > 2 ? "multiclass" : "binary";
    return out;
  }
  out.schema_line = StrCat("label = ", Quote(label.name), "\n");
  const bool classes =
      plan.type == ValueType::kInt && plan.min >= 0 && plan.max < kMaxClasses;
  if (label.distinct <= 2 && plan.min >= 0 && plan.max <= 1) {
    summary->task = "binary";
  } else if (classes) {
    out.loss = "softmax_crossentropy";
    out.classes = static_cast<int64_t>(plan.max) + 1;
    summary->task = "multiclass";
  } else {
    out.loss = "squared_error";
    summary->task = "regression";
    summary->classes.clear();
  }
  if (summary->task != "regression" && plan.format != ColumnFormat::kPlain) {
    // Show classes as the numbers the records hold.
    std::map<std::string, int64_t> merged;
    for (const auto& [text, n] : summary->classes) {
      StatusOr<Value> v = ParseFormattedValue(text, plan.type, plan.format);
      merged[v.ok() ? ValueToString(*v) : text] += n;
    }
    summary->classes.assign(merged.begin(), merged.end());
    SortClasses(&summary->classes);
  }
  summary->min = plan.min;
  summary->max = plan.max;
  summary->mean = plan.mean;
  return out;
}

// The index in `train` of the label column o.label (the last of that
// name); InvalidArgument when the header lacks it.
StatusOr<size_t> LabelIndex(const ScaffoldOptions& o,
                            const std::vector<ColumnProfile>& train) {
  const ColumnProfile* label = nullptr;
  size_t label_index = 0;
  for (size_t i = 0; i < train.size(); ++i) {
    if (train[i].name == o.label) {
      label = &train[i];
      label_index = i;
    }
  }
  if (!label) {
    return InvalidArgumentError(StrCat(o.train_csv, ": label column \"",
                                       o.label, "\" is not in the header"));
  }
  return label_index;
}

// Each column's plan, the eval CSV's merged in, and the cell texts the
// schema reads as missing: "?" and the NA spellings the plans read so.
void PlanColumns(const ScaffoldOptions& o,
                 const std::vector<ColumnProfile>& train,
                 const std::vector<ColumnProfile>* eval,
                 std::vector<ColumnPlan>* plans,
                 std::vector<std::string>* missing) {
  PlanOptions po;
  po.label = o.label;
  po.delimiter = o.csv.delimiter;
  *missing = {"?"};
  for (size_t i = 0; i < train.size(); ++i) {
    plans->push_back(PlanColumn(train[i], po));
    if (eval) MergeEvalColumn(train[i], (*eval)[i], po, &plans->back());
    for (const std::string& na : plans->back().na_missing) {
      if (std::find(missing->begin(), missing->end(), na) == missing->end()) {
        missing->push_back(na);
      }
    }
  }
}

// Rows without a label are refused, or (skip_missing_labels) left for
// gen-records to skip, with a warning.
Status CheckLabelRows(const ScaffoldOptions& o, const ColumnProfile& label,
                      const ColumnProfile* eval_label, bool numeric_label,
                      ScaffoldResult* result) {
  auto check_label = [&](const std::string& path,
                         const ColumnProfile& c) -> Status {
    Status st = CheckLabelPresent(path, c, numeric_label);
    if (st.ok() || !o.skip_missing_labels) return st;
    result->warnings.push_back(
        StrCat(st.message().substr(0, st.message().find("; remove")),
               "; run gen-records with --on-error skip to leave them out"));
    return OkStatus();
  };
  DTF_RETURN_IF_ERROR(check_label(o.train_csv, label));
  if (eval_label) DTF_RETURN_IF_ERROR(check_label(o.eval_csv, *eval_label));
  return OkStatus();
}

// The [data] table: the CSVs (split 80/20 without an eval CSV), read as
// they were profiled.
std::string DataToml(const ScaffoldOptions& o, bool has_eval) {
  std::string t = "[data]\n";
  if (has_eval) {
    StrAppend(&t, "csv = { train = [", Quote(PathFromJob(o.train_csv, o.dir)),
              "], eval = [", Quote(PathFromJob(o.eval_csv, o.dir)), "] }\n");
  } else {
    StrAppend(&t, "csv = [", Quote(PathFromJob(o.train_csv, o.dir)), "]\n",
              "split = { train = 0.8, eval = 0.2 }\n");
  }
  // The job reads the CSV as it was profiled. Quote() writes a tab as "\t".
  if (o.csv.delimiter != ',') {
    StrAppend(&t, "delimiter = ", Quote(std::string(1, o.csv.delimiter)), "\n");
  }
  if (o.csv.quote != '"') {
    StrAppend(&t, "quote = ", Quote(std::string(1, o.csv.quote)), "\n");
  }
  if (!o.csv.trim_spaces) StrAppend(&t, "trim_spaces = false\n");
  StrAppend(&t, "records = \"records\"\nshards = 2\n\n");
  return t;
}

// The [[features.*]] tables, column after column, appended to `*t`, with
// what init reports of each column in result->columns. `*wide`: whether a
// feature has a wide part. InvalidArgument when no column feeds the model.
Status AppendFeatures(const ScaffoldOptions& o,
                      const std::vector<ColumnProfile>& train,
                      const std::vector<ColumnPlan>& plans,
                      const std::vector<std::string>& missing,
                      ScaffoldResult* result, std::string* t, bool* wide) {
  int wide_count = 0, deep = 0;
  for (size_t i = 0; i < train.size(); ++i) {
    StrAppend(t, FeatureToml(train[i], plans[i], missing));
    result->columns.push_back(Reported(plans[i]));
    const PlannedFeature kind = plans[i].kind;
    deep += kind != PlannedFeature::kNone;
    wide_count += kind == PlannedFeature::kCategorical ||
                  kind == PlannedFeature::kHashed ||
                  kind == PlannedFeature::kDate ||
                  kind == PlannedFeature::kText || plans[i].bucketize;
  }
  *wide = wide_count != 0;
  if (deep == 0) {
    return InvalidArgumentError(
        StrCat(o.train_csv,
               ": no column besides the label and identifiers to learn from"));
  }
  return OkStatus();
}

// The [model] and [train] tables for `rows` training rows.
std::string ModelAndTrainToml(const LabelChoice& lc, bool wide, int64_t rows) {
  // Without a wide feature (only numbers, none bucketized) the model is the
  // deep part alone.
  std::string t =
      StrCat("\n[model]\ntype = ", wide ? "\"wide_deep\"" : "\"mlp\"",
             "\nhidden = [64, 32]\nloss = ", Quote(lc.loss), "\n",
             lc.classes ? StrCat("classes = ", lc.classes, "\n") : "");
  // Small data sets (Titanic's 891 rows) need small batches and more epochs
  // to take enough steps; larger ones (Adult's 32,561) train smoother with
  // larger batches and a gentler deep learning rate.
  const bool small = rows < 10000;
  // Enough steps for rare classes to be seen: at least about 2,000 at batch
  // 256 (12 to 40 epochs); early stopping ends it when the eval loss stops
  // improving.
  const int64_t steps_per_epoch = std::max<int64_t>((rows + 255) / 256, 1);
  const int64_t epochs =
      small ? 20
            : std::clamp<int64_t>(
                  (2000 + steps_per_epoch - 1) / steps_per_epoch, 12, 40);
  StrAppend(&t, "\n# Tuned for ", small ? "a small" : "a large", " data set (",
            rows, " training rows profiled).\n[train]\n",
            "batch_size = ", small ? 32 : 256, "\nepochs = ", epochs,
            "\nshuffle_buffer = 10000\nseed = 42\noutput_dir = \"out\"\n"
            "early_stopping = { metric = \"loss\", patience = 3 }\n",
            wide ? "\n[train.wide_optimizer]\ntype = \"ftrl\"\n"
                   "learning_rate = 0.05\n\n[train.deep_optimizer]\n"
                 : "\n[train.optimizer]\n",
            "type = \"adagrad\"\nlearning_rate = ", small ? "0.05" : "0.02",
            "\n");
  return t;
}

}  // namespace

StatusOr<std::string> JobToml(const ScaffoldOptions& o,
                              const std::vector<ColumnProfile>& train,
                              const std::vector<ColumnProfile>* eval,
                              ScaffoldResult* result) {
  DTF_ASSIGN_OR_RETURN(const size_t label_index, LabelIndex(o, train));
  const ColumnProfile* label = &train[label_index];
  const ColumnProfile* eval_label = nullptr;
  if (eval) {
    DTF_RETURN_IF_ERROR(CheckSameHeader(o, train, *eval));
    eval_label = &(*eval)[label_index];
  }
  std::vector<ColumnPlan> plans;
  std::vector<std::string> missing;
  PlanColumns(o, train, eval, &plans, &missing);
  const bool numeric_label = plans[label_index].type != ValueType::kString;
  DTF_RETURN_IF_ERROR(
      CheckLabelRows(o, *label, eval_label, numeric_label, result));
  result->missing = missing;
  std::string t =
      StrCat("# Made by `dtf init` from ", o.train_csv,
             ". Edit freely: docs/job-file.md describes every key.\n\n");
  StrAppend(&t, DataToml(o, eval != nullptr));
  DTF_ASSIGN_OR_RETURN(
      LabelChoice lc,
      ChooseLabel(o, *label, eval_label, plans[label_index], &result->label));
  StrAppend(&t, "[schema]\nmissing = ", QuotedList(missing), "\n",
            lc.schema_line, "columns = [\n");
  for (const ColumnPlan& p : plans) StrAppend(&t, "  ", ColumnEntry(p), ",\n");
  StrAppend(&t, "]\n");
  bool wide = false;
  DTF_RETURN_IF_ERROR(
      AppendFeatures(o, train, plans, missing, result, &t, &wide));
  const int64_t rows = label->cells();
  result->rows = rows;
  StrAppend(&t, ModelAndTrainToml(lc, wide, rows));
  return t;
}

}  // namespace dtf
