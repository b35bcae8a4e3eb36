#include "lib/kernels/embedding.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "lib/base/strings.h"
#include "lib/kernels/cuda/embedding.h"
#include "lib/kernels/internal/dispatch.h"
#include "lib/kernels/internal/parallel.h"

namespace dtf::kernels {
namespace {

// Columns of the gradient handled by one task.
constexpr int64_t kGradColumnBlock = 64;

// The factor applied to row [begin, end)'s weighted sum: 1, 1 / sum w or
// 1 / sqrt(sum w^2), and 0 when that divisor is 0.
float RowScale(const SparseIds& ids, Combiner combiner, int64_t begin,
               int64_t end) {
  if (combiner == Combiner::kSum) return 1.0f;
  const int64_t* id = ids.ids.data();
  const float* w = ids.has_weights() ? ids.weights.data() : nullptr;
  double total = 0.0;
  for (int64_t j = begin; j < end; ++j) {
    if (id[j] < 0) continue;
    const double wj = w != nullptr ? w[j] : 1.0;
    total += combiner == Combiner::kMean ? wj : wj * wj;
  }
  if (total == 0.0) return 0.0f;
  return static_cast<float>(
      combiner == Combiner::kMean ? 1.0 / total : 1.0 / std::sqrt(total));
}

// The first id >= num_rows (position -1 when there is none), looked for
// where the ids are. Device ids also get their row_splits copied to
// *host_splits in the same wait; for host ids it is left empty. (ctx and
// host_splits are read only in a build with CUDA.)
StatusOr<cuda::BadId> FindBadId([[maybe_unused]] const Context& ctx,
                                const SparseIds& ids, int64_t num_rows,
                                [[maybe_unused]] IdTensor* host_splits) {
  DTF_CUDA_DISPATCH(ctx, cuda::FindBadId(ctx, ids, num_rows, host_splits));
  const int64_t* id = ids.ids.data();
  for (int64_t j = 0; j < ids.ids.size(); ++j) {
    if (id[j] >= num_rows) return cuda::BadId{j, id[j]};
  }
  return cuda::BadId{};
}

Status CheckInputs(const Context& ctx, std::string_view op,
                   const SparseIds& ids, int64_t num_rows) {
  DTF_RETURN_IF_ERROR(internal::CheckDevice(ctx, ids.ids.device(), op));
  DTF_RETURN_IF_ERROR(internal::CheckDevice(ctx, ids.row_splits.device(), op));
  if (ids.has_weights()) {
    DTF_RETURN_IF_ERROR(internal::CheckDevice(ctx, ids.weights.device(), op));
  }
  // The range check scans only ids[0, size), so it may run before the
  // splits are known to be well formed; device ids bring their splits (B + 1
  // entries) back with its result, for the checks and the message below.
  IdTensor host_splits;
  DTF_ASSIGN_OR_RETURN(const cuda::BadId bad,
                       FindBadId(ctx, ids, num_rows, &host_splits));
  const bool on_host = ids.row_splits.device() == Device::kCpu;
  DTF_RETURN_IF_ERROR(
      Annotate(CheckSparseIds(ids, on_host ? nullptr : &host_splits), op));
  if (bad.position >= 0) {
    const IdTensor& row_splits = on_host ? ids.row_splits : host_splits;
    const int64_t* splits = row_splits.data();
    const int64_t row =
        std::upper_bound(splits, splits + row_splits.size(), bad.position) -
        splits - 1;
    return InvalidArgumentError(StrCat(
        op, ": id ", bad.id, " (batch row ", row, ", position ", bad.position,
        ") is out of range for a table of ", num_rows, " rows"));
  }
  return OkStatus();
}

}  // namespace

Status EmbeddingLookup(const Context& ctx, const Tensor& table,
                       const SparseIds& ids, Combiner combiner, Tensor* out) {
  if (table.rank() != 2) {
    return InvalidArgumentError(StrCat("EmbeddingLookup: table ",
                                       ShapeString(table.shape()),
                                       " must be a matrix"));
  }
  DTF_RETURN_IF_ERROR(
      internal::CheckDevice(ctx, table.device(), "EmbeddingLookup"));
  DTF_RETURN_IF_ERROR(CheckInputs(ctx, "EmbeddingLookup", ids, table.rows()));
  const int64_t batch = ids.batch_size();
  const int64_t d = table.cols();
  internal::PlaceOutput(ctx, out, {batch, d});
  DTF_CUDA_DISPATCH(ctx, cuda::EmbeddingLookup(ctx, table, ids, combiner, out));
  const int64_t* id = ids.ids.data();
  const int64_t* splits = ids.row_splits.data();
  const float* w = ids.has_weights() ? ids.weights.data() : nullptr;
  const float* rows = table.data();
  float* result = out->data();
  const double per_row =
      static_cast<double>(d) *
      (1.0 + static_cast<double>(ids.ids.size()) / std::max<int64_t>(batch, 1));
  internal::ParallelFor(ctx, batch, per_row, [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      float* acc = result + b * d;
      std::fill_n(acc, d, 0.0f);
      for (int64_t j = splits[b]; j < splits[b + 1]; ++j) {
        if (id[j] < 0) continue;
        const float* row = rows + id[j] * d;
        if (w == nullptr) {
          for (int64_t k = 0; k < d; ++k) acc[k] += row[k];
        } else {
          const float wj = w[j];
          for (int64_t k = 0; k < d; ++k) acc[k] += wj * row[k];
        }
      }
      const float scale = RowScale(ids, combiner, splits[b], splits[b + 1]);
      if (scale != 1.0f) {
        for (int64_t k = 0; k < d; ++k) acc[k] *= scale;
      }
    }
  });
  return OkStatus();
}

Status EmbeddingLookupGrad(const Context& ctx, const SparseIds& ids,
                           Combiner combiner, const Tensor& dout,
                           int64_t num_rows, SparseGrad* grad) {
  DTF_RETURN_IF_ERROR(CheckInputs(ctx, "EmbeddingLookupGrad", ids, num_rows));
  DTF_RETURN_IF_ERROR(
      internal::CheckDevice(ctx, dout.device(), "EmbeddingLookupGrad"));
  const int64_t batch = ids.batch_size();
  if (dout.rank() != 2 || dout.rows() != batch) {
    return InvalidArgumentError(
        StrCat("EmbeddingLookupGrad: dout ", ShapeString(dout.shape()),
               " must be [", batch, ", D] for a batch of ", batch, " rows"));
  }
  DTF_CUDA_DISPATCH(
      ctx, cuda::EmbeddingLookupGrad(ctx, ids, combiner, dout, num_rows, grad));
  const int64_t d = dout.cols();
  const int64_t nnz = ids.ids.size();
  const int64_t* id = ids.ids.data();

  internal::PlaceOutput(ctx, &grad->ids, nnz);
  int64_t* unique = grad->ids.data();
  int64_t count = 0;
  for (int64_t j = 0; j < nnz; ++j) {
    if (id[j] >= 0) unique[count++] = id[j];
  }
  std::sort(unique, unique + count);
  count = std::unique(unique, unique + count) - unique;
  grad->ids.Resize(count);
  internal::PlaceOutput(ctx, &grad->rows, {count, d});

  const int64_t* splits = ids.row_splits.data();
  const float* w = ids.has_weights() ? ids.weights.data() : nullptr;
  const float* dy = dout.data();
  float* rows = grad->rows.data();
  // A task owns a block of columns and visits the ids in batch order, so
  // every thread count adds the same terms in the same order.
  const int64_t blocks = (d + kGradColumnBlock - 1) / kGradColumnBlock;
  const double per_block =
      static_cast<double>(nnz + count) * std::min(d, kGradColumnBlock);
  internal::ParallelFor(ctx, blocks, per_block, [&](int64_t lo, int64_t hi) {
    const int64_t c0 = lo * kGradColumnBlock;
    const int64_t width = std::min(d, hi * kGradColumnBlock) - c0;
    for (int64_t u = 0; u < count; ++u) {
      std::fill_n(rows + u * d + c0, width, 0.0f);
    }
    for (int64_t b = 0; b < batch; ++b) {
      const float scale = RowScale(ids, combiner, splits[b], splits[b + 1]);
      if (scale == 0.0f) continue;
      const float* g = dy + b * d + c0;
      for (int64_t j = splits[b]; j < splits[b + 1]; ++j) {
        if (id[j] < 0) continue;
        const int64_t u =
            std::lower_bound(unique, unique + count, id[j]) - unique;
        const float coef = w != nullptr ? w[j] * scale : scale;
        float* acc = rows + u * d + c0;
        for (int64_t k = 0; k < width; ++k) acc[k] += coef * g[k];
      }
    }
  });
  return OkStatus();
}

}  // namespace dtf::kernels
