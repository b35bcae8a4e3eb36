// CUDA implementations of lib/kernels/loss.h and of the per-batch sums of
// lib/kernels/metrics.h, called on a CUDA context once the operands were
// checked (and the gradient output sized) on the device. Every loss or
// metric sum is accumulated in double in a fixed order (grid-stride sums per
// thread, a block reduction, then one block over the block sums), so it
// never depends on timing; each function waits for the stream to hand its
// value back to the host.
#pragma once

#include <cstdint>

#include "lib/base/status.h"
#include "lib/kernels/context.h"
#include "lib/kernels/internal/labels.h"
#include "lib/kernels/tensor.h"

namespace dtf::kernels::cuda {

// A class label outside [0, classes) (lib/kernels/internal/labels.h).
using BadLabel = internal::BadLabel;

// The first label of `labels` (on the device) outside [0, classes).
StatusOr<BadLabel> FindBadLabel(const Context& ctx, const IdTensor& labels,
                                int64_t classes);

// The losses of lib/kernels/loss.h for non-empty inputs (labels in range);
// the gradient output is null or already sized like the input.
StatusOr<float> SigmoidCrossEntropy(const Context& ctx, const Tensor& logits,
                                    const Tensor& labels, Tensor* dlogits);
StatusOr<float> SoftmaxCrossEntropy(const Context& ctx, const Tensor& logits,
                                    const IdTensor& labels, Tensor* dlogits);
StatusOr<float> MeanSquaredError(const Context& ctx, const Tensor& predictions,
                                 const Tensor& targets, Tensor* dpredictions);

// One metric update (lib/kernels/metrics.h): the batch's sums, computed on
// the device, are added to the metric's host-side state, which is left
// unchanged on an error.
Status UpdateBinaryAccuracy(const Context& ctx, const Tensor& probabilities,
                            const Tensor& labels, int64_t* correct,
                            int64_t* count);
// Subtracts the batch's sum of y log(q) + (1 - y) log(1 - q) from *sum.
Status UpdateLogLoss(const Context& ctx, const Tensor& probabilities,
                     const Tensor& labels, double* sum, int64_t* count);
// REQUIRES: every label in [0, scores.cols()).
Status UpdateMulticlassAccuracy(const Context& ctx, const Tensor& scores,
                                const IdTensor& labels, int64_t* correct,
                                int64_t* count);
Status UpdateSquaredError(const Context& ctx, const Tensor& predictions,
                          const Tensor& targets, double* sum, int64_t* count);

}  // namespace dtf::kernels::cuda
