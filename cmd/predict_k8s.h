// dtf predict --profile with a backend = "kubernetes" profile: one pod per
// shard (an Indexed Job, lib/launch/k8s/predict_manifests.h), each pod's
// shard brought back with `kubectl exec ... dtf task shard-fetch`, then the
// shards merged in input order (predict_shards.h) and the run's objects
// deleted, whatever the outcome.
#pragma once

#include <string>

#include "cmd/app.h"
#include "cmd/predict.h"
#include "lib/base/status.h"
#include "lib/launch/profile.h"

namespace dtf::cli {

// `output` is --output's target, absolute. With f.render_dir, writes the
// manifests there and starts nothing.
Status RunPredictOnKubernetes(const PredictFlags& f,
                              const launch::Profile& profile,
                              const std::string& output, Context* ctx);

}  // namespace dtf::cli
