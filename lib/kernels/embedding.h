// Embedding lookups over a ragged batch of ids (SparseIds) and their sparse
// gradient, with the combiners of TensorFlow's embedding_lookup_sparse:
//   sum:   out[b] = sum_j w_j * table[id_j]
//   mean:  out[b] = sum_j w_j * table[id_j] / sum_j w_j
//   sqrtn: out[b] = sum_j w_j * table[id_j] / sqrt(sum_j w_j^2)
// over the ids j of row b (w_j = 1 without weights). A row with no ids, or
// whose divisor is 0, gives zeros. Negative ids (a Vocabulary's -1 for an
// out-of-vocabulary value) are skipped, as if absent from the row; ids >=
// the table's row count are InvalidArgument. Weights are used as given.
#pragma once

#include "lib/base/combiner.h"
#include "lib/base/status.h"
#include "lib/kernels/context.h"
#include "lib/kernels/tensor.h"

namespace dtf::kernels {

// The one combiner (lib/base/combiner.h), as kernels::Combiner too.
using ::dtf::Combiner;

// out [B x D] from table [V x D]; *out is resized.
Status EmbeddingLookup(const Context& ctx, const Tensor& table,
                       const SparseIds& ids, Combiner combiner, Tensor* out);

// The gradient of EmbeddingLookup with respect to the table, given dout
// [B x D]: grad->ids are the distinct non-negative ids of the batch, sorted
// ascending, and grad->rows[u] sums the contributions of every occurrence of
// ids[u]. Rows the batch did not touch are absent. `num_rows` is the table's
// row count V, for range checks. grad's buffers are reused across calls. The
// result does not depend on the thread count.
Status EmbeddingLookupGrad(const Context& ctx, const SparseIds& ids,
                           Combiner combiner, const Tensor& dout,
                           int64_t num_rows, SparseGrad* grad);

}  // namespace dtf::kernels
