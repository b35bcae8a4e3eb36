// What brings a batch job's shards back from a Kubernetes run
// (k8s_batch.h): its pods followed with kubectl until every shard is
// fetched (`kubectl exec ... dtf task shard-fetch`, then shard-release), a
// pod that fails replaced by the Job up to the profile's max_restarts, a pod
// that cannot start given up after a while, and progress said as the pods'
// last log lines tell it.
#pragma once

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/batch/batch_job.h"
#include "lib/launch/batch/shard_progress.h"
#include "lib/launch/batch/shards.h"
#include "lib/launch/k8s/kubectl.h"
#include "lib/launch/profile.h"

namespace dtf::launch::k8s {

// Where each pod writes and holds its shard, in its emptyDir.
std::string PodShardPath();

// kubectl's output without its trailing newlines and spaces.
std::string TrimmedOutput(std::string s);

// Follows an applied run's pods until every shard is fetched, or the run
// fails, or it is cancelled (BatchIo::cancel).
class ShardCollector {
 public:
  ShardCollector(const Profile& profile, std::string run_id,
                 const BatchJob& job, const BatchIo& io);

  // The shards, index k of each from pod index k.
  StatusOr<std::vector<ShardOutput>> Collect();

 private:
  // Looks at one pod; true when its shard was fetched now.
  StatusOr<bool> Visit(const PodState& pod);
  // A pod that cannot start (its image, its container's configuration)
  // fails the run once it has waited long enough.
  Status CheckPending(const PodState& pod);
  std::string Logs(const std::string& pod, int tail);
  Status Fetch(const PodState& pod, size_t k);

  const KubernetesProfile& p_;
  const int max_restarts_;
  const std::string run_id_;
  const int w_;
  const BatchIo& io_;
  ShardProgress progress_;
  std::vector<ShardOutput> shards_;
  std::vector<bool> fetched_;
  std::vector<int> failures_;
  std::set<std::string> failed_pods_;
  std::set<std::string> told_;  // pods said to wait for a node
  std::map<std::string, std::chrono::steady_clock::time_point> stuck_since_;
};

}  // namespace dtf::launch::k8s
