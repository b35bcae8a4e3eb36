// The Kubernetes objects of a `dtf predict --profile` run (docs/launch.md,
// "Kubernetes profiles"; man/dtf-predict.1, "Sharded scoring"):
//
//   configmap.yaml  the model's files (binaryData), mounted read-only at
//                   kModelMountDir; only when the model is shipped, not
//                   read from the data volume
//   job.yaml        an Indexed Job of one pod per shard: container
//                   kPredictContainer runs `dtf <args>` (dtf predict
//                   --shard-from-env JOB_COMPLETION_INDEX ...), writing its
//                   shard into the emptyDir at kPredictWorkDir and holding
//                   it until the launcher has fetched it (kubectl exec);
//                   a failed pod is replaced max_restarts times, and any
//                   index that fails for good fails the Job
//                   (maxFailedIndexes 0)
//
// Labels and names as for a training run (manifests.h): `dtf-<run id>`,
// dtf.dev/run-id.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/k8s/k8s_profile.h"
#include "lib/launch/k8s/manifests.h"

namespace dtf::launch::k8s {

inline constexpr char kPredictContainer[] = "predict";
inline constexpr char kPredictWorkDir[] = "/work";
inline constexpr char kModelMountDir[] = "/etc/dtf/model";
// The most bytes of model files one ConfigMap carries (Kubernetes holds an
// object to 1 MiB; base64 takes a third more).
inline constexpr size_t kMaxShippedModelBytes = 700 * 1024;

struct PredictRenderRequest {
  KubernetesProfile profile;
  std::string run_id;
  int shards = 2;
  int max_restarts = 0;
  std::map<std::string, std::string> env;
  // The model's files (flat names, bytes) for the ConfigMap; empty: the
  // pods read the model from the data volume (args name it).
  std::map<std::string, std::string> model_files;
  // The container's arguments after /usr/bin/dtf.
  std::vector<std::string> args;
};

// The objects in the order they are applied. InvalidArgument for a shard
// count or run id Kubernetes cannot take, a model file name a ConfigMap's
// key cannot hold, and model files over kMaxShippedModelBytes (saying to
// put the model on the data volume instead).
StatusOr<std::vector<RenderedObject>> RenderPredictManifests(
    const PredictRenderRequest& r);

}  // namespace dtf::launch::k8s
