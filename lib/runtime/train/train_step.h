// Pieces of a training step shared by the single-process trainer and the
// distributed worker.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/data/model_options.h"
#include "lib/kernels/context.h"
#include "lib/kernels/tensor.h"
#include "lib/runtime/model/feature_layer.h"

namespace dtf::runtime {

// A duration in seconds, for throughput figures.
inline double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// The loss of `logits` against the labels of `inputs`, and d(loss)/d(logits).
StatusOr<float> ComputeLoss(const kernels::Context& ctx, Loss loss,
                            const kernels::Tensor& logits,
                            const ModelInputs& inputs,
                            kernels::Tensor* dlogits);

// Fits the layer's normalizer statistics with one pass over `files` (every
// training shard, in sorted order: every task computes the same values).
// Returns the examples seen.
StatusOr<int64_t> FitNormalizer(const kernels::Context& ctx,
                                const std::vector<std::string>& files,
                                FeatureLayer* layer);

}  // namespace dtf::runtime
