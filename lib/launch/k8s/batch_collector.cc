#include "lib/launch/k8s/batch_collector.h"

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "lib/base/strings.h"
#include "lib/launch/k8s/predict_manifests.h"

namespace dtf::launch::k8s {
namespace {

// How long a pod may wait on an image it cannot pull, or a container the
// kubelet cannot make, before the run is given up.
constexpr auto kStuckPending = std::chrono::seconds(120);
// Polls of the pods that may fail in a row (an API server restarting)
// before the run is given up.
constexpr int kMaxFailedPolls = 30;

std::string LastLine(const std::string& text) {
  const std::string t = TrimmedOutput(text);
  const size_t nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

}  // namespace

std::string PodShardPath() { return StrCat(kPredictWorkDir, "/predictions"); }

std::string TrimmedOutput(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

ShardCollector::ShardCollector(const Profile& profile, std::string run_id,
                               const BatchJob& job, const BatchIo& io)
    : p_(KubernetesTableOf(profile)),
      max_restarts_(profile.max_restarts),
      run_id_(std::move(run_id)),
      w_(job.shards),
      io_(io),
      progress_(io.info, job.title, job.done, size_t(job.shards)),
      shards_(size_t(job.shards)),
      fetched_(size_t(job.shards), false),
      failures_(size_t(job.shards), 0) {}

StatusOr<std::vector<ShardOutput>> ShardCollector::Collect() {
  int fetched = 0;
  int failed_polls = 0;
  while (fetched < w_) {
    if (io_.cancel != nullptr && io_.cancel->load()) {
      return CancelledError("interrupted");
    }
    const CommandResult listed = RunCommand(PodsCommand(p_, run_id_), true);
    StatusOr<std::vector<PodState>> pods =
        listed.exit_code == 0
            ? ParsePods(listed.output)
            : StatusOr<std::vector<PodState>>(UnavailableError(
                  StrCat(ShellJoin(PodsCommand(p_, run_id_)), " exited ",
                         listed.exit_code, ": ",
                         TrimmedOutput(listed.errors + listed.output))));
    if (!pods.ok()) {
      if (++failed_polls >= kMaxFailedPolls) {
        return UnavailableError(
            StrCat("kubernetes: run ", run_id_,
                   ": its pods cannot be followed: ", pods.status().message()));
      }
    } else {
      failed_polls = 0;
      for (const PodState& pod : *pods) {
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

StatusOr<bool> ShardCollector::Visit(const PodState& pod) {
  if (pod.index < 0 || pod.index >= w_) {
    return DataLossError(StrCat("kubernetes: pod ", pod.name, " has index ",
                                pod.index, ", past the run's ", w_, " shards"));
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
          "; its last lines:\n", TrimmedOutput(tail)));
    }
    io_.warning(StrCat("shard ", k, ": pod ", pod.name,
                       " failed; the Job replaces it (", failures_[k], " of ",
                       max_restarts_, " retries). Its last lines:\n",
                       TrimmedOutput(tail)));
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
  if (line.starts_with(kShardReady)) {
    DTF_RETURN_IF_ERROR(Fetch(pod, k));
    return true;
  }
  progress_.Take(k, line);
  return false;
}

Status ShardCollector::CheckPending(const PodState& pod) {
  static const std::set<std::string> kStuck = {
      "ErrImagePull", "ImagePullBackOff", "InvalidImageName",
      "CreateContainerConfigError", "CreateContainerError"};
  if (!kStuck.contains(pod.reason)) {
    stuck_since_.erase(pod.name);
    // Waiting for a node is the cluster's to end, not the run's: said
    // once, and Ctrl-C stops the run.
    if (pod.reason == "Unschedulable" && told_.insert(pod.name).second) {
      io_.warning(StrCat("pod ", pod.name, " waits for a node: ",
                         pod.message.empty() ? pod.reason : pod.message));
    }
    return OkStatus();
  }
  const auto now = std::chrono::steady_clock::now();
  const auto [it, first] = stuck_since_.emplace(pod.name, now);
  if (first) {
    io_.warning(StrCat("pod ", pod.name, " cannot start: ", pod.reason));
  }
  if (now - it->second >= kStuckPending) {
    return FailedPreconditionError(StrCat(
        "kubernetes: pod ", pod.name, " (shard ", pod.index,
        ") could not start within ",
        std::chrono::duration_cast<std::chrono::seconds>(kStuckPending).count(),
        " s: ", pod.reason, pod.message.empty() ? "" : ": ", pod.message,
        " (image ", p_.image, ")"));
  }
  return OkStatus();
}

std::string ShardCollector::Logs(const std::string& pod, int tail) {
  const CommandResult r =
      RunCommand(PodLogsCommand(p_, pod, kPredictContainer, tail));
  return r.exit_code == 0
             ? r.output
             : StrCat("(kubectl logs: ", TrimmedOutput(r.output), ")");
}

Status ShardCollector::Fetch(const PodState& pod, size_t k) {
  const std::vector<std::string> fetch =
      ExecCommand(p_, pod.name, kPredictContainer,
                  {"/usr/bin/dtf", "task", "shard-fetch", PodShardPath()});
  const std::string name = StrCat("pod ", pod.name, ":", PodShardPath());
  Status last;
  // kubectl exec's stream may break; the pod holds the shard until it is
  // released, so a failed fetch is tried again.
  for (int attempt = 0; attempt < 3; ++attempt) {
    const CommandResult r = RunCommand(fetch, true);
    if (r.exit_code != 0) {
      last =
          UnavailableError(StrCat("kubernetes: ", ShellJoin(fetch), " exited ",
                                  r.exit_code, ": ", TrimmedOutput(r.errors)));
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
    const std::vector<std::string> release =
        ExecCommand(p_, pod.name, kPredictContainer,
                    {"/usr/bin/dtf", "task", "shard-release", PodShardPath()});
    const CommandResult done = RunCommand(release);
    if (done.exit_code != 0) {
      // The pod is deleted with the run in any case.
      io_.warning(StrCat(ShellJoin(release), " exited ", done.exit_code, ": ",
                         TrimmedOutput(done.output)));
    }
    return OkStatus();
  }
  return last;
}

}  // namespace dtf::launch::k8s
