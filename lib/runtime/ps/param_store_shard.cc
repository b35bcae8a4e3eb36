#include "lib/runtime/ps/param_store_shard.h"

#include <algorithm>
#include <cstring>

#include "lib/base/strings.h"

namespace dtf::runtime {
namespace {

// dst[i] += the i-th little-endian float32 of `src`, i < n. In blocks
// through an aligned buffer on the stack: the bytes off the wire carry no
// float alignment, the block stays in L1, and a loop of a fixed count over
// it is vectorized at -O2.
void AddStoreBytes(const std::byte* src, size_t n, float* dst) {
  constexpr size_t kBlock = 1024;
  alignas(64) float block[kBlock];
  size_t at = 0;
  for (; at + kBlock <= n; at += kBlock) {
    std::memcpy(block, src + at * 4, sizeof(block));
    float* out = dst + at;
    for (size_t i = 0; i < kBlock; ++i) out[i] += block[i];
  }
  if (at == n) return;
  std::memcpy(block, src + at * 4, (n - at) * 4);
  for (size_t i = 0; at + i < n; ++i) dst[at + i] += block[i];
}

}  // namespace

Status CheckPieceSize(std::string_view name, const PieceView& piece,
                      int64_t cols) {
  // rows x cols x 4 in checked arithmetic: a piece claiming 2^62 rows must
  // not wrap around to the size it carries.
  int64_t bytes = 0;
  const bool overflow = __builtin_mul_overflow(piece.rows, cols, &bytes) ||
                        __builtin_mul_overflow(bytes, int64_t{4}, &bytes);
  if (piece.rows < 0 || cols < 0 || overflow ||
      int64_t(piece.values.size()) != bytes) {
    return InvalidArgumentError(
        StrCat("variable \"", name, "\": a piece of ", piece.rows,
               " rows holds ", piece.values.size(), " bytes, expected ",
               overflow ? std::string("more than 2^63") : StrCat(bytes)));
  }
  return OkStatus();
}

void StoreShard::Accumulate(const PieceView& piece,
                            const Partition& partition) {
  if (!touched) {
    touched = true;
    if (sparse) {
      sum_rows.clear();
      sum_index.clear();
    } else {
      grad.Resize(value.shape());
      std::fill_n(grad.data(), grad.size(), 0.0f);
    }
  }
  if (!sparse) {
    AddStoreBytes(piece.values.data(), size_t(piece.rows * cols),
                  grad.data() + (piece.row_offset - begin) * cols);
    return;
  }
  // Rows pushed more than once are summed in arrival order.
  for (size_t i = 0; i < piece.ids.size(); ++i) {
    const int64_t local = partition.LocalRow(piece.ids[i]);
    auto [it, fresh] = sum_index.try_emplace(local, int64_t(sum_index.size()));
    if (fresh) sum_rows.resize(sum_rows.size() + size_t(cols), 0.0f);
    AddStoreBytes(piece.values.data() + i * size_t(cols) * 4, size_t(cols),
                  sum_rows.data() + it->second * cols);
  }
}

Status StoreShard::Apply(const kernels::Context& ctx, float scale) {
  if (!sparse) {
    if (scale != 1.0f) {
      for (int64_t i = 0; i < grad.size(); ++i) grad[i] *= scale;
    }
    if (!trainable) {  // moving statistics: the pushes are deltas
      for (int64_t i = 0; i < grad.size(); ++i) value[i] += grad[i];
      return OkStatus();
    }
    return optimizer->ApplyDense(ctx, &value, grad, &state);
  }
  if (sum_index.empty()) return OkStatus();
  // The optimizers take a sparse gradient's rows sorted by id.
  sorted.assign(sum_index.begin(), sum_index.end());
  std::sort(sorted.begin(), sorted.end());
  const int64_t n = int64_t(sorted.size());
  sparse_grad.ids.Resize(n);
  sparse_grad.rows.Resize({n, cols});
  for (int64_t u = 0; u < n; ++u) {
    sparse_grad.ids[u] = sorted[size_t(u)].first;
    const float* src = sum_rows.data() + sorted[size_t(u)].second * cols;
    float* dst = sparse_grad.rows.data() + u * cols;
    for (int64_t c = 0; c < cols; ++c) dst[c] = scale * src[c];
  }
  return optimizer->ApplySparse(ctx, &value, sparse_grad, &state);
}

}  // namespace dtf::runtime
