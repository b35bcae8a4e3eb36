#include "lib/data/job_scaffold.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <set>

#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/base/toml_text.h"
#include "lib/data/column_profile.h"

namespace dtf {
namespace {

namespace fs = std::filesystem;
using toml_util::Quote;

// Columns with at most this many distinct values get a vocabulary; more get
// hashed.
constexpr size_t kMaxVocabulary = 100;
// Numeric columns with more distinct values than this are also bucketized
// (at their deciles) into the wide part.
constexpr size_t kBucketizeAbove = 10;

// TF's rule of thumb for embedding sizes: about the fourth root of the
// number of ids, scaled, within [4, 16].
int64_t EmbeddingSize(size_t ids) {
  double d = 4 * std::pow(static_cast<double>(ids), 0.25);
  return std::clamp<int64_t>(std::llround(d), 4, 16);
}

// An identifier: every value distinct (PassengerId, Name). It generalises to
// nothing, so it feeds no feature.
bool IsIdentifier(const ColumnProfile& c) {
  return c.values > 50 && !c.counts_capped &&
         static_cast<int64_t>(c.counts.size()) == c.values;
}

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
  for (size_t i = 0; i < out.values.size(); ++i) {
    out.mapping[out.values[i]] = static_cast<int64_t>(i);
  }
  if (eval) {
    for (const auto& [value, count] : eval->counts) {
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

std::string ValueTypeText(ValueType t) { return std::string(ValueTypeName(t)); }

// Vocabulary, most frequent first (ties by value).
std::vector<std::string> Vocabulary(const ColumnProfile& c) {
  std::vector<std::pair<int64_t, std::string>> byCount;
  for (const auto& [v, n] : c.counts) byCount.push_back({-n, v});
  std::sort(byCount.begin(), byCount.end());
  std::vector<std::string> out;
  for (auto& [n, v] : byCount) out.push_back(v);
  return out;
}

std::string QuotedList(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    StrAppend(&out, i ? ", " : "", Quote(items[i]));
  }
  return out + "]";
}

StatusOr<std::string> JobToml(const ScaffoldOptions& o,
                              const std::vector<ColumnProfile>& train,
                              const std::vector<ColumnProfile>* eval) {
  const ColumnProfile* label = nullptr;
  const ColumnProfile* eval_label = nullptr;
  for (const ColumnProfile& c : train) {
    if (c.name == o.label) label = &c;
  }
  if (!label) {
    return InvalidArgumentError(StrCat(o.train_csv, ": label column \"",
                                       o.label, "\" is not in the header"));
  }
  if (eval) {
    for (const ColumnProfile& c : *eval) {
      if (c.name == o.label) eval_label = &c;
    }
  }
  std::string t =
      StrCat("# Made by `dtf init` from ", o.train_csv,
             ". Edit freely: docs/job-file.md describes every key.\n\n");
  // [data]
  StrAppend(&t, "[data]\n");
  if (eval) {
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
  // [schema]
  StrAppend(&t, "[schema]\nmissing = [\"?\"]\n");
  bool numeric_label = label->type != ValueType::kString;
  LabelValues lv;
  if (numeric_label) {
    StrAppend(&t, "label = ", Quote(o.label), "\n");
  } else {
    lv = CollectLabel(*label, eval_label);
    StrAppend(&t, "label = { column = ", Quote(o.label), ", map = { ");
    bool first = true;
    for (const auto& [text, id] : lv.mapping) {
      StrAppend(&t, first ? "" : ", ", Quote(text), " = ", id);
      first = false;
    }
    StrAppend(&t, " } }\n");
  }
  StrAppend(&t, "columns = [\n");
  for (const ColumnProfile& c : train) {
    ValueType type = c.type;
    // A column that is int in one file and float in the other is float.
    if (eval) {
      for (const ColumnProfile& e : *eval) {
        if (e.name == c.name && e.type != c.type && c.name != o.label) {
          type = (e.type == ValueType::kString || type == ValueType::kString)
                     ? ValueType::kString
                     : ValueType::kFloat;
        }
      }
    }
    StrAppend(&t, "  ", Quote(StrCat(c.name, ":", ValueTypeText(type))), ",\n");
  }
  StrAppend(&t, "]\n");
  // [features]
  int wide = 0, deep = 0;
  std::string features;
  for (const ColumnProfile& c : train) {
    if (c.name == o.label || IsIdentifier(c) || c.values == 0) continue;
    if (c.type != ValueType::kString) {
      StrAppend(&features, "\n[[features.numeric]]\nname = ", Quote(c.name),
                "\nnormalize = true\n");
      if (c.missing > 0)
        StrAppend(&features, "default = ", Number(c.mean), "\n");
      ++deep;
      if (c.distinct() > kBucketizeAbove) {
        std::vector<double> bounds;
        for (int q = 1; q < 10; ++q) {
          double b = c.Quantile(q / 10.0);
          if (bounds.empty() || b > bounds.back()) bounds.push_back(b);
        }
        std::string list;
        for (double b : bounds)
          StrAppend(&list, list.empty() ? "" : ", ", Number(b));
        StrAppend(&features, "\n[[features.bucketized]]\nname = ",
                  Quote(StrCat(c.name, "_buckets")),
                  "\nsource = ", Quote(c.name), "\nboundaries = [", list,
                  "]\nwide = true\n");
        ++wide;
      }
    } else if (c.distinct() <= kMaxVocabulary) {
      StrAppend(&features, "\n[[features.categorical]]\nname = ", Quote(c.name),
                "\nvocabulary = ", QuotedList(Vocabulary(c)),
                "\nnum_oov_buckets = 1\nembedding = ",
                EmbeddingSize(c.distinct() + 1), "\nwide = true\n");
      ++wide;
      ++deep;
    } else {
      size_t buckets = std::bit_ceil(std::min<size_t>(2 * c.distinct(), 4096));
      StrAppend(&features, "\n[[features.hashed]]\nname = ", Quote(c.name),
                "\nbuckets = ", buckets,
                "\nembedding = ", EmbeddingSize(buckets), "\nwide = true\n");
      ++wide;
      ++deep;
    }
  }
  if (wide == 0 || deep == 0) {
    return InvalidArgumentError(
        StrCat(o.train_csv,
               ": no column besides the label and identifiers to learn from"));
  }
  StrAppend(&t, features);
  // [model] and [train]
  std::string loss = "binary_crossentropy";
  std::string classes;
  if (numeric_label) {
    if (label->type == ValueType::kFloat && label->distinct() > 2) {
      loss = "squared_error";
    } else if (label->distinct() > 2) {
      loss = "softmax_crossentropy";
      classes = StrCat("classes = ", label->distinct(), "\n");
    }
  } else if (lv.values.size() > 2) {
    loss = "softmax_crossentropy";
    classes = StrCat("classes = ", lv.values.size(), "\n");
  }
  StrAppend(&t, "\n[model]\ntype = \"wide_deep\"\nhidden = [64, 32]\nloss = ",
            Quote(loss), "\n", classes);
  // Small data sets (Titanic's 891 rows) need small batches and more epochs
  // to take enough steps; larger ones (Adult's 32,561) train smoother with
  // larger batches and a gentler deep learning rate.
  const int64_t rows = label->values + label->missing;
  const bool small = rows < 10000;
  StrAppend(&t, "\n# Tuned for ", small ? "a small" : "a large", " data set (",
            rows, " training rows profiled).\n[train]\n",
            "batch_size = ", small ? 32 : 256, "\nepochs = ", small ? 20 : 12,
            "\nshuffle_buffer = 10000\nseed = 42\noutput_dir = \"out\"\n"
            "early_stopping = { metric = \"loss\", patience = 3 }\n"
            "\n[train.wide_optimizer]\ntype = \"ftrl\"\nlearning_rate = 0.05\n"
            "\n[train.deep_optimizer]\ntype = \"adagrad\"\nlearning_rate = ",
            small ? "0.05" : "0.02", "\n");
  return t;
}

// A small data set whose label depends on every column, so the job learns
// something: x and y are floats, size an int, color a string.
void WriteSynthetic(int rows, uint32_t seed, std::string* csv) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0, 1);
  const char* colors[] = {"red", "green", "blue"};
  *csv = "x,y,size,color,label\n";
  for (int i = 0; i < rows; ++i) {
    double x = normal(rng), y = normal(rng);
    int size = static_cast<int>(rng() % 5) + 1;
    const char* color = colors[rng() % 3];
    double z = 1.5 * x - y + 0.4 * (size - 3) +
               (std::string(color) == "red" ? 1.0 : -0.5) + 0.5 * normal(rng);
    StrAppend(csv, fmt::format("{:.4f},{:.4f},{},{},{}\n", x, y, size, color,
                               z > 0 ? 1 : 0));
  }
}

constexpr char kLocalProfile[] =
    R"(# Every task runs as a process on this machine.
backend = "local"
ps = 1
workers = 2
)";

constexpr char kClusterProfile[] =
    R"(# A host list reached over SSH. Copy to cluster.toml, fill in the hosts and
# run `dtf launch --profile cluster`.
# backend = "ssh"
# hosts = ["node1", "node2"]       # or hostfile = "hosts.txt" (host slots=N gpus=M)
# ps = 1
# workers = 2
#
# [ssh]
# user = "me"
# port = 22
# identity_file = "~/.ssh/id_ed25519"
# known_hosts = "~/.ssh/known_hosts"
)";

// `dir` without trailing slashes ("/" stays "/").
fs::path WithoutTrailingSlash(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return fs::path(dir);
}

// The job's name for its README: the directory's own name, also for "." and
// "demo/".
std::string JobName(const fs::path& dir) {
  std::error_code ec;
  fs::path full = fs::weakly_canonical(fs::absolute(dir, ec), ec);
  std::string name = full.filename().string();
  return ec || name.empty() ? dir.string() : name;
}

// Where the files are written until the whole job is: a fresh hidden
// directory beside the job directory (when that does not exist yet, then
// renamed to it) or inside it (when it exists and is empty, then its entries
// are moved up). Unless Commit() succeeds, the destructor removes it, and
// the parent directories Open() made: a failed run leaves nothing behind.
class Staging {
 public:
  Staging() = default;
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  ~Staging() {
    if (!committed_) Abandon();
  }

  Status Open(const fs::path& dir) {
    dir_ = dir;
    std::error_code ec;
    fs::file_status st = fs::status(dir_, ec);
    if (fs::exists(st)) {
      if (!fs::is_directory(st)) {
        return FailedPreconditionError(
            StrCat(dir_.string(), ": exists and is not a directory"));
      }
      if (!fs::is_empty(dir_, ec) || ec) {
        if (ec) return ErrnoToStatus(ec.value(), dir_.string());
        return FailedPreconditionError(
            StrCat(dir_.string(),
                   ": exists and is not empty; choose a new directory"));
      }
      inside_ = true;
      return MakeStage(dir_, ".dtf-init-");
    }
    fs::path parent = dir_.parent_path();
    if (parent.empty()) parent = ".";
    std::vector<fs::path> missing;
    for (fs::path p = parent; !p.empty() && !fs::exists(p, ec);
         p = p.parent_path()) {
      missing.push_back(p);
      if (p == p.parent_path()) break;
    }
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
      if (!fs::create_directory(*it, ec) && ec) {
        return ErrnoToStatus(ec.value(), it->string());
      }
      made_.push_back(*it);
    }
    if (!fs::is_directory(parent, ec)) {
      return FailedPreconditionError(
          StrCat(parent.string(), ": is not a directory"));
    }
    return MakeStage(parent, StrCat(".", dir_.filename().string(), ".init-"));
  }

  // The staging directory, to write the job's files under.
  std::string path() const { return stage_.string(); }

  Status Commit() {
    std::error_code ec;
    if (!inside_) {
      fs::rename(stage_, dir_, ec);
      if (ec) return ErrnoToStatus(ec.value(), dir_.string());
    } else {
      std::vector<fs::path> moved;
      for (const auto& e : fs::directory_iterator(stage_, ec)) {
        fs::path to = dir_ / e.path().filename();
        fs::rename(e.path(), to, ec);
        if (ec) break;
        moved.push_back(to);
      }
      if (ec) {
        Status st = ErrnoToStatus(ec.value(), dir_.string());
        for (const fs::path& p : moved) {
          fs::rename(p, stage_ / p.filename(), ec);
        }
        return st;
      }
      fs::remove(stage_, ec);
    }
    committed_ = true;
    return OkStatus();
  }

 private:
  Status MakeStage(const fs::path& in, const std::string& prefix) {
    std::random_device rd;
    std::error_code ec;
    for (int attempt = 0; attempt < 100; ++attempt) {
      fs::path p = in / StrCat(prefix, fmt::format("{:08x}", rd()));
      if (fs::create_directory(p, ec)) {
        stage_ = p;
        return OkStatus();
      }
      if (ec) return ErrnoToStatus(ec.value(), p.string());
    }
    return AlreadyExistsError(
        StrCat(in.string(), ": no free name for a staging directory"));
  }

  void Abandon() {
    std::error_code ec;
    if (!stage_.empty()) fs::remove_all(stage_, ec);
    // Only directories still empty: nothing but this run wrote there.
    for (auto it = made_.rbegin(); it != made_.rend(); ++it) {
      fs::remove(*it, ec);
    }
  }

  fs::path dir_;
  fs::path stage_;
  bool inside_ = false;
  std::vector<fs::path> made_;  // parents created, outermost first
  bool committed_ = false;
};

}  // namespace

StatusOr<ScaffoldResult> ScaffoldJob(const ScaffoldOptions& options) {
  ScaffoldOptions o = options;
  if (o.dir.empty()) return InvalidArgumentError("no job directory given");
  if (!o.train_csv.empty() && o.label.empty()) {
    return InvalidArgumentError("--label COL is required with --from-csv");
  }
  const fs::path dir = WithoutTrailingSlash(o.dir);
  o.dir = dir.string();
  // Everything is written under the staging directory; the job file's paths
  // are those the files will have in the job directory.
  Staging staging;
  DTF_RETURN_IF_ERROR(staging.Open(dir));
  const std::string stage = staging.path();
  std::error_code ec;
  fs::create_directory(stage + "/profiles", ec);
  if (ec) return ErrnoToStatus(ec.value(), stage + "/profiles");
  ScaffoldResult result;
  std::string train_path = o.train_csv, eval_path = o.eval_csv;
  if (o.train_csv.empty()) {
    fs::create_directory(stage + "/data", ec);
    if (ec) return ErrnoToStatus(ec.value(), stage + "/data");
    std::string train, eval;
    WriteSynthetic(1000, 1, &train);
    WriteSynthetic(300, 2, &eval);
    o.train_csv = o.dir + "/data/train.csv";
    o.eval_csv = o.dir + "/data/eval.csv";
    o.label = "label";
    o.csv = CsvOptions();
    train_path = stage + "/data/train.csv";
    eval_path = stage + "/data/eval.csv";
    DTF_RETURN_IF_ERROR(WriteFileAtomically(train_path, train));
    DTF_RETURN_IF_ERROR(WriteFileAtomically(eval_path, eval));
    result.files = {"data/train.csv", "data/eval.csv"};
  }
  const std::vector<std::string> missing = {"?"};
  DTF_ASSIGN_OR_RETURN(std::vector<ColumnProfile> train,
                       ProfileCsv(train_path, o.csv, missing, o.max_rows));
  std::vector<ColumnProfile> eval;
  if (!eval_path.empty()) {
    DTF_ASSIGN_OR_RETURN(eval,
                         ProfileCsv(eval_path, o.csv, missing, o.max_rows));
  }
  DTF_ASSIGN_OR_RETURN(std::string job,
                       JobToml(o, train, eval_path.empty() ? nullptr : &eval));
  DTF_RETURN_IF_ERROR(WriteFileAtomically(stage + "/dtf.toml", job));
  DTF_RETURN_IF_ERROR(
      WriteFileAtomically(stage + "/profiles/local.toml", kLocalProfile));
  DTF_RETURN_IF_ERROR(WriteFileAtomically(
      stage + "/profiles/cluster.example.toml", kClusterProfile));
  DTF_RETURN_IF_ERROR(WriteFileAtomically(
      stage + "/README.md",
      StrCat("# ", JobName(dir), "\n\nA dtf job made by `dtf init` from `",
             o.train_csv,
             "`.\n\n```sh\ndtf gen-records --job dtf.toml   # CSV -> TFRecord "
             "shards in records/\ndtf train --job dtf.toml         # train "
             "in one process; model and checkpoint in out/\n```\n\n"
             "`dtf.toml` holds the schema, the feature columns, the model and "
             "the training settings; `profiles/` the environments to launch "
             "in.\n")));
  DTF_RETURN_IF_ERROR(staging.Commit());
  for (const char* f : {"dtf.toml", "profiles/local.toml",
                        "profiles/cluster.example.toml", "README.md"}) {
    result.files.push_back(f);
  }
  return result;
}

}  // namespace dtf
