// CUDA implementations of lib/kernels/embedding.h, called on a CUDA context
// once the ids were checked. The lookup gives each output element a thread
// that adds the row's ids in order; the gradient radix-sorts (id,
// position) pairs with CUB, so the distinct ids come out sorted and each
// id's occurrences stay in batch order, then sums every distinct id's
// occurrences in that order: results never depend on timing.
#pragma once

#include <cstdint>

#include "lib/base/status.h"
#include "lib/kernels/context.h"
#include "lib/kernels/embedding.h"
#include "lib/kernels/tensor.h"

namespace dtf::kernels::cuda {

// An id at or past the end of the table: its position in ids.ids (-1 when
// there is none) and its value.
struct BadId {
  int64_t position = -1;
  int64_t id = 0;
};

// What the host needs to check ids that live on the device, in one wait:
// the first id >= num_rows, found on the device, and a host copy of
// ids.row_splits (B + 1 entries) in *host_splits.
StatusOr<BadId> FindBadId(const Context& ctx, const SparseIds& ids,
                          int64_t num_rows, IdTensor* host_splits);

// out [B x D], sized on the device, from table [V x D]; ids checked.
Status EmbeddingLookup(const Context& ctx, const Tensor& table,
                       const SparseIds& ids, Combiner combiner, Tensor* out);

// The sparse gradient for dout [B x D]; ids checked against num_rows.
// Reads the number of distinct ids back (one wait) to size grad->ids and
// grad->rows on the device.
Status EmbeddingLookupGrad(const Context& ctx, const SparseIds& ids,
                           Combiner combiner, const Tensor& dout,
                           int64_t num_rows, SparseGrad* grad);

}  // namespace dtf::kernels::cuda
