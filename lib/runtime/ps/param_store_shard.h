// ParamStore's piece of one variable (param_store.h, which calls it
// Shard), and the sum of the gradients pushed for it since its last update.
// Internal to the store.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lib/base/status.h"
#include "lib/kernels/context.h"
#include "lib/kernels/optimizer.h"
#include "lib/kernels/tensor.h"
#include "lib/runtime/model/model.h"
#include "lib/runtime/ps/param_store_types.h"
#include "lib/runtime/ps/partition.h"

namespace dtf::runtime {

struct StoreShard {
  std::string name;
  std::vector<int64_t> shape;  // of the whole variable
  int64_t cols = 1;
  bool sparse = false;
  bool trainable = true;
  Part part = Part::kDeep;
  int64_t begin = 0, end = 0;                     // dense: the global rows held
  kernels::Tensor value;                          // [local rows, cols]
  const kernels::Optimizer* optimizer = nullptr;  // trainable ones
  kernels::OptimizerState state;

  // Whether a gradient was summed since the last update.
  bool touched = false;
  // Dense: the summed gradient, kept between updates (a fresh one per push
  // cost page faults on every step).
  kernels::Tensor grad;
  // Sparse: the summed rows, cols each, and where each local row's sum is.
  std::vector<float> sum_rows;
  std::unordered_map<int64_t, int64_t> sum_index;
  std::vector<std::pair<int64_t, int64_t>> sorted;
  kernels::SparseGrad sparse_grad;

  // Adds the piece to the sum. REQUIRES: the piece was checked against
  // this shard (ParamStore::CheckPiecesLocked).
  void Accumulate(const PieceView& piece, const Partition& partition);
  // Applies `scale` times the sum: the optimizer's update, or for a
  // variable that is not trained (moving statistics) the sum as a delta.
  Status Apply(const kernels::Context& ctx, float scale);
};

// OK when `piece` holds rows x cols float32 bytes, in checked arithmetic;
// InvalidArgument naming `name` otherwise.
Status CheckPieceSize(std::string_view name, const PieceView& piece,
                      int64_t cols);

}  // namespace dtf::runtime
