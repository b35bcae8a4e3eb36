// What a parameter-server worker sends and asks for in a step
// (update_ps.cc): the rows its batch touches, the pull requests of the
// model's variables, and the gradient pieces for each PS.
#pragma once

#include <cstdint>
#include <vector>

#include "lib/kernels/optimizer.h"
#include "lib/kernels/tensor.h"
#include "lib/runtime/model/feature_layer.h"
#include "lib/runtime/model/model.h"
#include "lib/runtime/ps/ps_client.h"

namespace dtf::runtime {

// The rows of each sparse input a batch touches: sorted unique global ids;
// the batch's ids are rewritten to positions in that list.
void Compact(ModelInputs* inputs, std::vector<std::vector<int64_t>>* unique);

// The model's variables as pull requests: dense ones whole, sparse ones the
// rows of `unique` (or all rows when null). `full_shapes`: each variable's
// whole shape. With `states` (parallel to the variables), their optimizer
// slots too.
void PullRequests(Model& model, const std::vector<std::vector<int64_t>>* unique,
                  std::vector<PsClient::DenseVar>* dense,
                  std::vector<PsClient::SparseVar>* sparse,
                  const std::vector<std::vector<int64_t>>& full_shapes,
                  std::vector<kernels::OptimizerState>* states = nullptr);

// A step's gradients (`grads`, on the host) as pieces for each PS of
// `ps`, to the PS that holds their rows; for untrainable variables
// (moving statistics) the change the step made since `before`. `unique`:
// the batch's rows (Compact).
std::vector<std::vector<rpc::TensorPiece>> GradientPieces(
    const PsClient& ps, const Model& model, const std::vector<Gradient>& grads,
    const std::vector<kernels::Tensor>& before,
    const std::vector<std::vector<int64_t>>& unique,
    const std::vector<std::vector<int64_t>>& full_shapes);

}  // namespace dtf::runtime
