#include "cmd/predict_k8s.h"

#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "cmd/cli_output.h"
#include "cmd/predict_progress.h"
#include "cmd/predict_shards.h"
#include "cmd/run_common.h"
#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/launch/k8s/kubectl.h"
#include "lib/launch/k8s/predict_manifests.h"
#include "lib/launch/run_id.h"
#include "lib/runtime/export/exported_model.h"

namespace dtf::cli {
namespace {

namespace fs = std::filesystem;
namespace k8s = launch::k8s;

// What each pod writes and holds, in its emptyDir.
const std::string kPodShard = StrCat(k8s::kPredictWorkDir, "/predictions");
// How long a pod holds its scored shard for the launcher to fetch.
constexpr int kHoldSeconds = 1800;
// How long a pod may wait on an image it cannot pull, or a container the
// kubelet cannot make, before the run is given up.
constexpr auto kStuckPending = std::chrono::seconds(120);
// Polls of the pods that may fail in a row (an API server restarting)
// before the run is given up.
constexpr int kMaxFailedPolls = 30;

bool OnDataVolume(const k8s::KubernetesProfile& p, const std::string& path) {
  if (p.data.kind == k8s::DataVolume::Kind::kNone) return false;
  const std::string& mount = p.data.mount_path;
  return path == mount || path.starts_with(StrCat(mount, "/"));
}

std::string WhereOf(const launch::Profile& profile, const char* key) {
  const auto it = profile.kubernetes.where.find(key);
  return it != profile.kubernetes.where.end() ? it->second : profile.source;
}

// The model's files for its ConfigMap.
StatusOr<std::map<std::string, std::string>> ModelFiles(
    const std::string& model) {
  std::map<std::string, std::string> files;
  for (std::string_view name : {runtime::kModelToml, runtime::kVariablesFile}) {
    DTF_ASSIGN_OR_RETURN(files[std::string(name)],
                         ReadFileToString(StrCat(model, "/", name)));
  }
  return files;
}

Status WriteManifests(const std::vector<k8s::RenderedObject>& objects,
                      const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return ErrnoToStatus(ec.value(), dir);
  for (const k8s::RenderedObject& o : objects) {
    DTF_RETURN_IF_ERROR(WriteFileAtomically(StrCat(dir, "/", o.file), o.yaml));
  }
  return OkStatus();
}

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string LastLine(const std::string& text) {
  const std::string t = Trimmed(text);
  const size_t nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

// Follows an applied run's pods until every shard is fetched, or the run
// fails, or it is cancelled.
class ShardCollector {
 public:
  ShardCollector(const launch::Profile& profile, std::string run_id, int w,
                 Context* ctx)
      : p_(profile.kubernetes),
        max_restarts_(profile.max_restarts),
        run_id_(std::move(run_id)),
        w_(w),
        ctx_(ctx),
        progress_(ctx->console, size_t(w)),
        shards_(size_t(w)),
        fetched_(size_t(w), false),
        failures_(size_t(w), 0) {}

  // The shards, index k of each from pod index k.
  StatusOr<std::vector<ShardOutput>> Collect() {
    int fetched = 0;
    int failed_polls = 0;
    while (fetched < w_) {
      if (ctx_->cancel != nullptr && ctx_->cancel->load()) {
        return CancelledError("interrupted");
      }
      const k8s::CommandResult listed =
          k8s::RunCommand(k8s::PodsCommand(p_, run_id_), true);
      StatusOr<std::vector<k8s::PodState>> pods =
          listed.exit_code == 0
              ? k8s::ParsePods(listed.output)
              : StatusOr<std::vector<k8s::PodState>>(UnavailableError(
                    StrCat(k8s::ShellJoin(k8s::PodsCommand(p_, run_id_)),
                           " exited ", listed.exit_code, ": ",
                           Trimmed(listed.errors + listed.output))));
      if (!pods.ok()) {
        if (++failed_polls >= kMaxFailedPolls) {
          return UnavailableError(StrCat(
              "kubernetes: run ", run_id_,
              ": its pods cannot be followed: ", pods.status().message()));
        }
      } else {
        failed_polls = 0;
        for (const k8s::PodState& pod : *pods) {
          DTF_ASSIGN_OR_RETURN(const bool got, Visit(pod));
          fetched += got ? 1 : 0;
        }
      }
      if (fetched < w_) {
        progress_.Show(false);
        std::this_thread::sleep_for(std::chrono::seconds(1));
      }
    }
    progress_.Show(true);
    return std::move(shards_);
  }

 private:
  // Looks at one pod; true when its shard was fetched now.
  StatusOr<bool> Visit(const k8s::PodState& pod) {
    if (pod.index < 0 || pod.index >= w_) {
      return DataLossError(StrCat("kubernetes: pod ", pod.name, " has index ",
                                  pod.index, ", past the run's ", w_,
                                  " shards"));
    }
    const size_t k = size_t(pod.index);
    if (fetched_[k]) return false;
    if (pod.phase == "Failed") {
      if (!failed_pods_.insert(pod.name).second) return false;
      const std::string tail = Logs(pod.name, 20);
      if (++failures_[k] > max_restarts_) {
        return InternalError(StrCat(
            "kubernetes: shard ", k, " of ", w_, ": pod ", pod.name, " failed",
            pod.reason.empty() ? "" : StrCat(" (", pod.reason, ")"),
            failures_[k] > 1 ? StrCat(", after ", failures_[k], " tries") : "",
            "; its last lines:\n", Trimmed(tail)));
      }
      ctx_->console.Warning(
          StrCat("shard ", k, ": pod ", pod.name,
                 " failed; the Job replaces it (", failures_[k], " of ",
                 max_restarts_, " retries). Its last lines:\n", Trimmed(tail)));
      return false;
    }
    if (pod.phase == "Succeeded") {
      return FailedPreconditionError(
          StrCat("kubernetes: shard ", k, ": pod ", pod.name,
                 " ended before its shard was fetched (released by someone "
                 "else?)"));
    }
    if (pod.phase == "Pending") {
      DTF_RETURN_IF_ERROR(CheckPending(pod));
      return false;
    }
    if (pod.phase != "Running") return false;
    const std::string line = LastLine(Logs(pod.name, 1));
    if (line.starts_with(kPredictReady)) {
      DTF_RETURN_IF_ERROR(Fetch(pod, k));
      return true;
    }
    progress_.Take(k, line);
    return false;
  }

  // A pod that cannot start (its image, its container's configuration)
  // fails the run once it has waited kStuckPending.
  Status CheckPending(const k8s::PodState& pod) {
    static const std::set<std::string> kStuck = {
        "ErrImagePull", "ImagePullBackOff", "InvalidImageName",
        "CreateContainerConfigError", "CreateContainerError"};
    if (!kStuck.contains(pod.reason)) {
      stuck_since_.erase(pod.name);
      // Waiting for a node is the cluster's to end, not the run's: said
      // once, and Ctrl-C stops the run.
      if (pod.reason == "Unschedulable" && told_.insert(pod.name).second) {
        ctx_->console.Warning(
            StrCat("pod ", pod.name, " waits for a node: ",
                   pod.message.empty() ? pod.reason : pod.message));
      }
      return OkStatus();
    }
    const auto now = std::chrono::steady_clock::now();
    const auto [it, first] = stuck_since_.emplace(pod.name, now);
    if (first) {
      ctx_->console.Warning(
          StrCat("pod ", pod.name, " cannot start: ", pod.reason));
    }
    if (now - it->second >= kStuckPending) {
      return FailedPreconditionError(
          StrCat("kubernetes: pod ", pod.name, " (shard ", pod.index,
                 ") could not start within ",
                 std::chrono::duration_cast<std::chrono::seconds>(kStuckPending)
                     .count(),
                 " s: ", pod.reason, pod.message.empty() ? "" : ": ",
                 pod.message, " (image ", p_.image, ")"));
    }
    return OkStatus();
  }

  std::string Logs(const std::string& pod, int tail) {
    const k8s::CommandResult r = k8s::RunCommand(
        k8s::PodLogsCommand(p_, pod, k8s::kPredictContainer, tail));
    return r.exit_code == 0 ? r.output
                            : StrCat("(kubectl logs: ", Trimmed(r.output), ")");
  }

  Status Fetch(const k8s::PodState& pod, size_t k) {
    const std::vector<std::string> fetch =
        k8s::ExecCommand(p_, pod.name, k8s::kPredictContainer,
                         {"/usr/bin/dtf", "task", "shard-fetch", kPodShard});
    const std::string name = StrCat("pod ", pod.name, ":", kPodShard);
    Status last;
    // kubectl exec's stream may break; the pod holds the shard until it is
    // released, so a failed fetch is tried again.
    for (int attempt = 0; attempt < 3; ++attempt) {
      const k8s::CommandResult r = k8s::RunCommand(fetch, true);
      if (r.exit_code != 0) {
        last = UnavailableError(StrCat("kubernetes: ", k8s::ShellJoin(fetch),
                                       " exited ", r.exit_code, ": ",
                                       Trimmed(r.errors)));
        continue;
      }
      StatusOr<ShardOutput> shard = ShardFromFrame(r.output, name);
      if (!shard.ok()) {
        last = shard.status();
        continue;
      }
      shards_[k] = *std::move(shard);
      fetched_[k] = true;
      progress_.Set(k, shards_[k].index.rows);
      const std::vector<std::string> release = k8s::ExecCommand(
          p_, pod.name, k8s::kPredictContainer,
          {"/usr/bin/dtf", "task", "shard-release", kPodShard});
      const k8s::CommandResult done = k8s::RunCommand(release);
      if (done.exit_code != 0) {
        // The pod is deleted with the run in any case.
        ctx_->console.Warning(StrCat(k8s::ShellJoin(release), " exited ",
                                     done.exit_code, ": ",
                                     Trimmed(done.output)));
      }
      return OkStatus();
    }
    return last;
  }

  const k8s::KubernetesProfile& p_;
  const int max_restarts_;
  const std::string run_id_;
  const int w_;
  Context* ctx_;
  ShardProgress progress_;
  std::vector<ShardOutput> shards_;
  std::vector<bool> fetched_;
  std::vector<int> failures_;
  std::set<std::string> failed_pods_;
  std::set<std::string> told_;  // pods said to wait for a node
  std::map<std::string, std::chrono::steady_clock::time_point> stuck_since_;
};

}  // namespace

Status RunPredictOnKubernetes(const PredictFlags& f,
                              const launch::Profile& profile,
                              const std::string& output, Context* ctx) {
  const k8s::KubernetesProfile& p = profile.kubernetes;
  const int w = f.workers > 0 ? f.workers : profile.workers;
  const int threads = f.threads > 0 ? f.threads : profile.threads;
  // The pods read the input from the data volume, as they see it.
  for (const std::string& input : f.input) {
    if (p.data.kind == k8s::DataVolume::Kind::kNone) {
      return FailedPreconditionError(StrCat(
          profile.source,
          ": dtf predict on Kubernetes reads its input from the profile's "
          "data volume, and it has none: set kubernetes.data (a pvc, "
          "host_path or image) and give --input as the pods see it"));
    }
    if (!OnDataVolume(p, input)) {
      return InvalidArgumentError(StrCat(
          "--input ", input, ": not on the data volume, which the pods see at ",
          p.data.mount_path, " (", WhereOf(profile, "kubernetes.data"),
          "); give the pattern as the pods see it, e.g. ", p.data.mount_path,
          "/eval/*.tfrecord"));
    }
  }
  k8s::PredictRenderRequest req;
  req.profile = p;
  req.shards = w;
  req.max_restarts = profile.max_restarts;
  req.env = profile.env;
  std::string model = f.model;
  if (OnDataVolume(p, f.model)) {
    // Read in the pods; checked here too where this machine sees it.
    std::error_code ec;
    if (fs::exists(f.model, ec)) DTF_RETURN_IF_ERROR(CheckPredictModel(f));
  } else {
    // A model that does not load, or a --keep it lacks, stops here.
    DTF_RETURN_IF_ERROR(CheckPredictModel(f));
    DTF_ASSIGN_OR_RETURN(req.model_files, ModelFiles(f.model));
    model = k8s::kModelMountDir;
  }
  req.args = PredictTaskArgs(f, f.input, model, threads);
  req.args.insert(req.args.end(),
                  {"--shard-from-env", k8s::kIndexEnv, "--of",
                   std::to_string(w), "--output", kPodShard, "--hold-for-fetch",
                   std::to_string(kHoldSeconds)});
  DTF_ASSIGN_OR_RETURN(req.run_id, launch::NewRunId());
  DTF_ASSIGN_OR_RETURN(const std::vector<k8s::RenderedObject> objects,
                       k8s::RenderPredictManifests(req));
  if (!f.render_dir.empty()) {
    DTF_RETURN_IF_ERROR(WriteManifests(objects, f.render_dir));
    ctx->console.Info(
        StrCat("dtf: predict: run ", req.run_id, ": ", objects.size(),
               " manifests written (", w, " shards); apply them with\n  ",
               k8s::ShellJoin(k8s::ApplyCommand(p, f.render_dir))));
    return PrintStdout(StrCat(f.render_dir, "\n"));
  }
  DTF_RETURN_IF_ERROR(k8s::CheckCluster(p));
  RunsFlags runs;
  runs.runs_dir = f.runs_dir;
  const std::string runs_dir = RunsDirOf(runs);
  DTF_ASSIGN_OR_RETURN(const std::string id,
                       launch::CreateRunDir(runs_dir, req.run_id));
  const std::string run_dir = StrCat(runs_dir, "/", id);
  const std::string dir = StrCat(run_dir, "/kubernetes");
  DTF_RETURN_IF_ERROR(WriteManifests(objects, dir));
  // dtf status, logs and stop find the run by its record; its objects are
  // the Job's kind (flavour "job").
  k8s::KubernetesProfile record = p;
  record.flavour = k8s::Flavour::kJob;
  DTF_RETURN_IF_ERROR(
      WriteFileAtomically(StrCat(run_dir, "/", k8s::kRunRecordName),
                          k8s::RunRecordJson(id, record)));
  const std::vector<std::string> remove = k8s::DeleteCommand(record, id);
  auto delete_run = [&] {
    const k8s::CommandResult d = k8s::RunCommand(remove);
    if (d.exit_code != 0) {
      ctx->console.Warning(
          StrCat("the run's objects may be left in the "
                 "cluster (",
                 k8s::ShellJoin(remove), " exited ", d.exit_code, ": ",
                 Trimmed(d.output), "); `dtf stop ", id, "` deletes them"));
    }
  };
  const std::vector<std::string> apply = k8s::ApplyCommand(p, dir);
  const k8s::CommandResult applied = k8s::RunCommand(apply);
  if (applied.exit_code != 0) {
    delete_run();
    return FailedPreconditionError(StrCat("kubernetes: ", k8s::ShellJoin(apply),
                                          " failed:\n", applied.output));
  }
  ctx->console.Info(StrCat("dtf: predict: run ", id, " (", run_dir, "), ", w,
                           " pod", w == 1 ? "" : "s", " in namespace ", p.ns,
                           "; Ctrl-C stops it and deletes them"));
  ShardCollector collector(profile, id, w, ctx);
  StatusOr<std::vector<ShardOutput>> shards = collector.Collect();
  delete_run();
  if (!shards.ok()) return shards.status();
  DTF_ASSIGN_OR_RETURN(const int64_t num_files, ShardInputCount(*shards));
  DTF_ASSIGN_OR_RETURN(
      const std::string merged,
      MergeShardOutputs(*shards, num_files, f.format == "csv"));
  DTF_RETURN_IF_ERROR(WriteFileAtomically(output, merged));
  ctx->console.Info(StrCat("dtf: predict: merged ", w, " shard",
                           w == 1 ? "" : "s", " into ", f.output));
  return OkStatus();
}

}  // namespace dtf::cli
