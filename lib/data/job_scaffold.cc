#include "lib/data/job_scaffold.h"

#include <filesystem>
#include <random>
#include <string>
#include <system_error>
#include <vector>

#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/data/column_profile.h"
#include "lib/data/csv_sniff.h"
#include "lib/data/job_scaffold_toml.h"

namespace dtf {
namespace {

namespace fs = std::filesystem;

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

constexpr char kSlurmProfile[] =
    R"(# A Slurm batch job: `dtf launch --profile slurm` submits it with sbatch (or,
# inside an allocation, runs it there with srun). The job directory (or
# run_dir below) must be on storage every node shares.
backend = "slurm"
ps = 1
workers = 2

[slurm]
# partition = "cpu"          # default: Slurm's default partition
# account = "my-project"
time_limit = "01:00:00"      # sbatch --time
# nodes = 2                  # default: as Slurm fits the tasks
# tasks_per_node = 2
# gpus_per_node = 0
# base_port = 29500          # task k of a node listens on base_port + k
# run_dir = "/shared/dtf-runs"   # default: the job directory's .dtf/runs
# sbatch_args = ["--qos=normal"]
# srun_args = []
)";

constexpr char kSparkProfile[] =
    R"(# A Spark application: `dtf launch --profile spark` submits it with
# spark-submit as one barrier stage of ps + workers tasks, one task per
# executor (standalone or YARN). Name the master; the job directory (or
# run_dir below) must be on storage every executor shares.
backend = "spark"
ps = 1
workers = 2

[spark]
master = "spark://localhost:7077"  # or "yarn"
# spark_submit = "spark-submit"    # a path, or a name looked up in PATH
# executor_cores = 1               # each task takes a whole executor
# executor_memory = "1g"
# python = "python3"               # the driver's and the executors' Python
# slot_wait = 60                   # seconds to wait for every executor
# ship = true                      # ship dtf and the job with --archives
# run_dir = "/shared/dtf-runs"     # default: the job directory's .dtf/runs
# conf = { "spark.yarn.queue" = "default" }
)";

constexpr char kKubernetesProfile[] =
    R"(# Pods on a Kubernetes cluster. Copy to kubernetes.toml, fill in the image
# (`dtf pack image`, pushed where the cluster pulls from) and the data, and
# run `dtf launch --profile kubernetes --dry-run` (or --render DIR) to see
# the manifests; without those flags dtf launch applies them with kubectl.
# backend = "kubernetes"
# ps = 1
# workers = 2
# max_restarts = 1                  # a failed pod is replaced this often
#
# [kubernetes]
# image = "registry.example/ml/dtf:0.1.0"
# namespace = "default"
# flavour = "job"                   # an Indexed Job; "tfjob": a Kubeflow TFJob
# data = { pvc = "my-data", mount_path = "/data" }
# job_dir = "/job"                  # where the pods see dtf.toml
#
# [kubernetes.worker]
# requests = { cpu = "2", memory = "4Gi" }
# limits = { cpu = "4", memory = "8Gi" }
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
  if (o.sniff_delimiter && !options.train_csv.empty()) {
    DTF_ASSIGN_OR_RETURN(o.csv.delimiter, SniffDelimiter(train_path));
    result.delimiter_sniffed = true;
  }
  result.delimiter = o.csv.delimiter;
  result.train_csv = o.train_csv;
  const std::vector<std::string> missing = {"?"};
  DTF_ASSIGN_OR_RETURN(
      std::vector<ColumnProfile> train,
      ProfileCsv(train_path, o.csv, missing, o.max_rows, o.label));
  std::vector<ColumnProfile> eval;
  if (!eval_path.empty()) {
    DTF_ASSIGN_OR_RETURN(
        eval, ProfileCsv(eval_path, o.csv, missing, o.max_rows, o.label));
  }
  DTF_ASSIGN_OR_RETURN(
      std::string job,
      JobToml(o, train, eval_path.empty() ? nullptr : &eval, &result));
  DTF_RETURN_IF_ERROR(WriteFileAtomically(stage + "/dtf.toml", job));
  DTF_RETURN_IF_ERROR(
      WriteFileAtomically(stage + "/profiles/local.toml", kLocalProfile));
  DTF_RETURN_IF_ERROR(WriteFileAtomically(
      stage + "/profiles/cluster.example.toml", kClusterProfile));
  DTF_RETURN_IF_ERROR(
      WriteFileAtomically(stage + "/profiles/slurm.toml", kSlurmProfile));
  DTF_RETURN_IF_ERROR(
      WriteFileAtomically(stage + "/profiles/spark.toml", kSparkProfile));
  DTF_RETURN_IF_ERROR(WriteFileAtomically(
      stage + "/profiles/kubernetes.example.toml", kKubernetesProfile));
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
  for (const char* f :
       {"dtf.toml", "profiles/local.toml", "profiles/cluster.example.toml",
        "profiles/slurm.toml", "profiles/spark.toml",
        "profiles/kubernetes.example.toml", "README.md"}) {
    result.files.push_back(f);
  }
  return result;
}

}  // namespace dtf
