#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "lib/kernels/cuda/cuda_state.h"
#include "lib/kernels/cuda/embedding.h"
#include "lib/kernels/cuda/launch.h"

namespace dtf::kernels::cuda {
namespace {

using internal::kThreadsPerBlock;

// No position of any id: what FirstBadIdKernel leaves when every id fits.
constexpr unsigned long long kNone = ~0ull;

__global__ void FirstBadIdKernel(const int64_t* ids, int64_t n,
                                 int64_t num_rows, unsigned long long* first) {
  DTF_CUDA_LOOP(j, n) {
    if (ids[j] >= num_rows) {
      atomicMin(first, static_cast<unsigned long long>(j));
    }
  }
}

// scale[b]: the factor of row b's weighted sum, as RowScale in embedding.cc
// computes it: 1 / sum w (mean) or 1 / sqrt(sum w^2) (sqrtn) over the row's
// non-negative ids, added in order in double; 0 when that sum is 0.
__global__ void RowScales(const int64_t* ids, const int64_t* splits,
                          const float* weights, int64_t batch, bool mean,
                          float* scale) {
  DTF_CUDA_LOOP(b, batch) {
    double total = 0.0;
    for (int64_t j = splits[b]; j < splits[b + 1]; ++j) {
      if (ids[j] < 0) continue;
      const double w = weights != nullptr ? weights[j] : 1.0;
      total += mean ? w : w * w;
    }
    scale[b] = total == 0.0
                   ? 0.0f
                   : static_cast<float>(mean ? 1.0 / total : 1.0 / sqrt(total));
  }
}

// out[b, k] = scale[b] * sum over the ids j of row b, in order, of
// w_j * table[id_j, k]: one thread per output element, so neighbouring
// threads read neighbouring columns of the same table row. scale is null for
// the sum combiner.
__global__ void Lookup(const float* table, const int64_t* ids,
                       const int64_t* splits, const float* weights,
                       const float* scale, int64_t batch, int64_t d,
                       float* out) {
  DTF_CUDA_LOOP(i, batch * d) {
    const int64_t b = i / d;
    const int64_t k = i % d;
    float acc = 0.0f;
    for (int64_t j = splits[b]; j < splits[b + 1]; ++j) {
      const int64_t id = ids[j];
      if (id < 0) continue;
      const float v = table[id * d + k];
      acc += weights != nullptr ? weights[j] * v : v;
    }
    if (scale != nullptr) acc *= scale[b];
    out[i] = acc;
  }
}

// keys[j] = ids[j], or `absent` (larger than every valid id) for a negative
// id, so negative ids sort last; positions[j] = j.
__global__ void SortInputs(const int64_t* ids, int64_t n, uint64_t absent,
                           uint64_t* keys, int64_t* positions) {
  DTF_CUDA_LOOP(j, n) {
    keys[j] = ids[j] < 0 ? absent : static_cast<uint64_t>(ids[j]);
    positions[j] = j;
  }
}

// heads[i] = 1 where sorted key i is the first of a run of one valid id.
__global__ void RunHeads(const uint64_t* keys, int64_t n, uint64_t absent,
                         int64_t* heads) {
  DTF_CUDA_LOOP(i, n) {
    heads[i] = keys[i] != absent && (i == 0 || keys[i - 1] != keys[i]);
  }
}

// For the run u of each valid id in the sorted keys (runs: the inclusive
// sum of heads, so runs[i] - 1 is the run of key i): unique[u] = the id and
// [begin[u], end[u]) its range of sorted positions.
__global__ void RunBounds(const uint64_t* keys, const int64_t* runs, int64_t n,
                          uint64_t absent, int64_t* unique, int64_t* begin,
                          int64_t* end) {
  DTF_CUDA_LOOP(i, n) {
    const uint64_t key = keys[i];
    if (key == absent) continue;
    const int64_t u = runs[i] - 1;
    if (i == 0 || keys[i - 1] != key) {
      unique[u] = static_cast<int64_t>(key);
      begin[u] = i;
    }
    if (i + 1 == n || keys[i + 1] != key) end[u] = i + 1;
  }
}

// For each id position j: row[j] = its batch row (the b with splits[b] <= j
// < splits[b + 1], by binary search; REQUIRES batch >= 1 and j < splits
// [batch]), or -1 when that row's scale is 0, which the CPU skips; coef[j] =
// w_j * scale, the factor of dout[row] in the gradient of id j.
__global__ void Occurrences(const int64_t* splits, int64_t batch,
                            const float* weights, const float* scale, int64_t n,
                            int64_t* row, float* coef) {
  DTF_CUDA_LOOP(j, n) {
    int64_t lo = 0;
    int64_t hi = batch;  // splits[lo] <= j < splits[hi]
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (splits[mid] <= j) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    const float s = scale != nullptr ? scale[lo] : 1.0f;
    row[j] = s == 0.0f ? -1 : lo;
    coef[j] = weights != nullptr ? weights[j] * s : s;
  }
}

// rows[u, k] = the sum of coef[j] * dout[row[j], k] over the positions j of
// run u (positions[begin[u] .. end[u]), ascending: batch order, the CPU's
// order). One thread per output element.
__global__ void SumRuns(const int64_t* positions, const int64_t* begin,
                        const int64_t* end, const int64_t* row,
                        const float* coef, const float* dout, int64_t count,
                        int64_t d, float* rows) {
  DTF_CUDA_LOOP(t, count * d) {
    const int64_t u = t / d;
    const int64_t k = t % d;
    float acc = 0.0f;
    for (int64_t i = begin[u]; i < end[u]; ++i) {
      const int64_t j = positions[i];
      const int64_t b = row[j];
      if (b < 0) continue;
      acc += coef[j] * dout[b * d + k];
    }
    rows[t] = acc;
  }
}

// Copies one value from the device to the host, waiting for the stream.
template <typename T>
StatusOr<T> ReadBack(internal::CudaState& state, cudaStream_t stream,
                     const T* value, const char* what) {
  T* host = static_cast<T*>(state.HostScratch(sizeof(T)));
  DTF_RETURN_IF_ERROR(internal::CudaError(
      cudaMemcpyAsync(host, value, sizeof(T), cudaMemcpyDeviceToHost, stream),
      what));
  DTF_RETURN_IF_ERROR(internal::CudaError(cudaStreamSynchronize(stream), what));
  return *host;
}

// Offsets of 256-byte-aligned arrays in one scratch allocation.
class ScratchLayout {
 public:
  // Reserves n elements of T; returns their offset.
  template <typename T>
  size_t Add(int64_t n) {
    const size_t at = bytes_;
    bytes_ += (static_cast<size_t>(n) * sizeof(T) + 255) / 256 * 256;
    return at;
  }
  size_t bytes() const { return bytes_; }

 private:
  size_t bytes_ = 0;
};

template <typename T>
T* At(void* base, size_t offset) {
  return reinterpret_cast<T*>(static_cast<char*>(base) + offset);
}

// internal::PlaceOutput on a CUDA context (parallel.h does not compile
// under nvcc): device storage, kept when the output already has it.
void PlaceOnDevice(IdTensor* ids, int64_t n) {
  ids->ResizeIn(Memory::kDevice, n);
}
void PlaceOnDevice(Tensor* t, int64_t rows, int64_t cols) {
  t->ResizeIn(Memory::kDevice, {rows, cols});
}

}  // namespace

StatusOr<BadId> FindBadId(const Context& ctx, const SparseIds& ids,
                          int64_t num_rows, IdTensor* host_splits) {
  constexpr char kWhat[] = "embedding id check";
  cudaStream_t stream = internal::StreamFor(ctx);
  internal::CudaState& state = internal::CudaStateOf(ctx);
  const int64_t n = ids.ids.size();
  const int64_t num_splits = ids.row_splits.size();
  auto* first = static_cast<unsigned long long*>(
      state.DeviceScratch(sizeof(unsigned long long)));
  // Pinned: the first bad position, then the row splits.
  auto* host = static_cast<char*>(state.HostScratch(
      sizeof(unsigned long long) + size_t(num_splits) * sizeof(int64_t)));
  // All ones: kNone, which atomicMin lowers to the first bad position.
  DTF_RETURN_IF_ERROR(internal::CudaError(
      cudaMemsetAsync(first, 0xFF, sizeof(unsigned long long), stream), kWhat));
  if (n > 0) {
    FirstBadIdKernel<<<internal::BlocksFor(n), kThreadsPerBlock, 0, stream>>>(
        ids.ids.data(), n, num_rows, first);
    DTF_RETURN_IF_ERROR(internal::LaunchError(kWhat));
  }
  DTF_RETURN_IF_ERROR(
      internal::CudaError(cudaMemcpyAsync(host, first, sizeof(*first),
                                          cudaMemcpyDeviceToHost, stream),
                          kWhat));
  if (num_splits > 0) {
    DTF_RETURN_IF_ERROR(internal::CudaError(
        cudaMemcpyAsync(host + sizeof(*first), ids.row_splits.data(),
                        size_t(num_splits) * sizeof(int64_t),
                        cudaMemcpyDeviceToHost, stream),
        kWhat));
  }
  DTF_RETURN_IF_ERROR(
      internal::CudaError(cudaStreamSynchronize(stream), kWhat));
  unsigned long long position = kNone;
  std::memcpy(&position, host, sizeof(position));
  host_splits->ResizeIn(Memory::kHost, num_splits);
  if (num_splits > 0) {
    std::memcpy(host_splits->data(), host + sizeof(position),
                size_t(num_splits) * sizeof(int64_t));
  }
  if (position == kNone) return BadId{};
  // Only on the error path: a second wait, for the offending id itself.
  DTF_ASSIGN_OR_RETURN(
      const int64_t id,
      ReadBack(state, stream, ids.ids.data() + position, kWhat));
  return BadId{static_cast<int64_t>(position), id};
}

Status EmbeddingLookup(const Context& ctx, const Tensor& table,
                       const SparseIds& ids, Combiner combiner, Tensor* out) {
  cudaStream_t stream = internal::StreamFor(ctx);
  const int64_t batch = ids.batch_size();
  const int64_t d = table.cols();
  if (batch == 0 || d == 0) return OkStatus();
  const float* weights = ids.has_weights() ? ids.weights.data() : nullptr;
  float* scale = nullptr;
  if (combiner != Combiner::kSum) {
    scale = static_cast<float*>(internal::CudaStateOf(ctx).DeviceScratch(
        size_t(batch) * sizeof(float)));
    RowScales<<<internal::BlocksFor(batch), kThreadsPerBlock, 0, stream>>>(
        ids.ids.data(), ids.row_splits.data(), weights, batch,
        combiner == Combiner::kMean, scale);
    DTF_RETURN_IF_ERROR(internal::LaunchError("EmbeddingLookup"));
  }
  Lookup<<<internal::BlocksFor(batch * d), kThreadsPerBlock, 0, stream>>>(
      table.data(), ids.ids.data(), ids.row_splits.data(), weights, scale,
      batch, d, out->data());
  return internal::LaunchError("EmbeddingLookup");
}

Status EmbeddingLookupGrad(const Context& ctx, const SparseIds& ids,
                           Combiner combiner, const Tensor& dout,
                           int64_t num_rows, SparseGrad* grad) {
  constexpr char kWhat[] = "EmbeddingLookupGrad";
  cudaStream_t stream = internal::StreamFor(ctx);
  const int64_t nnz = ids.ids.size();
  const int64_t batch = ids.batch_size();
  const int64_t d = dout.cols();
  if (nnz == 0) {
    PlaceOnDevice(&grad->ids, 0);
    PlaceOnDevice(&grad->rows, 0, d);
    return OkStatus();
  }
  // Every valid id is below num_rows (checked), so sorting on the bits of
  // `absent` = num_rows orders them all, and negative ids, mapped to
  // `absent`, after them.
  const uint64_t absent = static_cast<uint64_t>(std::max<int64_t>(num_rows, 0));
  const int end_bit = std::max(1, static_cast<int>(std::bit_width(absent)));

  size_t sort_bytes = 0;
  DTF_RETURN_IF_ERROR(internal::CudaError(
      cub::DeviceRadixSort::SortPairs(
          nullptr, sort_bytes, static_cast<const uint64_t*>(nullptr),
          static_cast<uint64_t*>(nullptr), static_cast<const int64_t*>(nullptr),
          static_cast<int64_t*>(nullptr), nnz, 0, end_bit, stream),
      kWhat));
  size_t scan_bytes = 0;
  DTF_RETURN_IF_ERROR(internal::CudaError(
      cub::DeviceScan::InclusiveSum(
          nullptr, scan_bytes, static_cast<const int64_t*>(nullptr),
          static_cast<int64_t*>(nullptr), nnz, stream),
      kWhat));

  ScratchLayout layout;
  const size_t keys_in_at = layout.Add<uint64_t>(nnz);
  const size_t keys_at = layout.Add<uint64_t>(nnz);
  const size_t positions_in_at = layout.Add<int64_t>(nnz);
  const size_t positions_at = layout.Add<int64_t>(nnz);
  const size_t heads_at = layout.Add<int64_t>(nnz);
  const size_t runs_at = layout.Add<int64_t>(nnz);
  const size_t begin_at = layout.Add<int64_t>(nnz);  // at most nnz runs
  const size_t end_at = layout.Add<int64_t>(nnz);
  const size_t row_at = layout.Add<int64_t>(nnz);
  const size_t coef_at = layout.Add<float>(nnz);
  const size_t scale_at = layout.Add<float>(batch);
  const size_t temp_at =
      layout.Add<char>(static_cast<int64_t>(std::max(sort_bytes, scan_bytes)));
  void* base = internal::CudaStateOf(ctx).DeviceScratch(layout.bytes());
  uint64_t* keys_in = At<uint64_t>(base, keys_in_at);
  uint64_t* keys = At<uint64_t>(base, keys_at);
  int64_t* positions_in = At<int64_t>(base, positions_in_at);
  int64_t* positions = At<int64_t>(base, positions_at);
  int64_t* heads = At<int64_t>(base, heads_at);
  int64_t* runs = At<int64_t>(base, runs_at);
  int64_t* begin = At<int64_t>(base, begin_at);
  int64_t* end = At<int64_t>(base, end_at);
  int64_t* row = At<int64_t>(base, row_at);
  float* coef = At<float>(base, coef_at);
  float* scale =
      combiner == Combiner::kSum ? nullptr : At<float>(base, scale_at);
  void* temp = At<char>(base, temp_at);

  // The distinct ids: a stable sort keeps each id's positions ascending;
  // the inclusive sum of run heads numbers the runs and counts them.
  const unsigned blocks = internal::BlocksFor(nnz);
  SortInputs<<<blocks, kThreadsPerBlock, 0, stream>>>(
      ids.ids.data(), nnz, absent, keys_in, positions_in);
  DTF_RETURN_IF_ERROR(internal::LaunchError(kWhat));
  DTF_RETURN_IF_ERROR(internal::CudaError(
      cub::DeviceRadixSort::SortPairs(temp, sort_bytes, keys_in, keys,
                                      positions_in, positions, nnz, 0, end_bit,
                                      stream),
      kWhat));
  RunHeads<<<blocks, kThreadsPerBlock, 0, stream>>>(keys, nnz, absent, heads);
  DTF_RETURN_IF_ERROR(internal::LaunchError(kWhat));
  DTF_RETURN_IF_ERROR(internal::CudaError(
      cub::DeviceScan::InclusiveSum(temp, scan_bytes,
                                    static_cast<const int64_t*>(heads), runs,
                                    nnz, stream),
      kWhat));
  DTF_ASSIGN_OR_RETURN(
      const int64_t count,
      ReadBack(internal::CudaStateOf(ctx), stream,
               static_cast<const int64_t*>(runs + (nnz - 1)), kWhat));

  PlaceOnDevice(&grad->ids, count);
  PlaceOnDevice(&grad->rows, count, d);
  if (count == 0) return OkStatus();
  RunBounds<<<blocks, kThreadsPerBlock, 0, stream>>>(
      keys, runs, nnz, absent, grad->ids.data(), begin, end);
  DTF_RETURN_IF_ERROR(internal::LaunchError(kWhat));
  if (d == 0) return OkStatus();

  // Each position's row and factor, then every run's sum in position order.
  if (scale != nullptr) {
    RowScales<<<internal::BlocksFor(batch), kThreadsPerBlock, 0, stream>>>(
        ids.ids.data(), ids.row_splits.data(),
        ids.has_weights() ? ids.weights.data() : nullptr, batch,
        combiner == Combiner::kMean, scale);
    DTF_RETURN_IF_ERROR(internal::LaunchError(kWhat));
  }
  Occurrences<<<blocks, kThreadsPerBlock, 0, stream>>>(
      ids.row_splits.data(), batch,
      ids.has_weights() ? ids.weights.data() : nullptr, scale, nnz, row, coef);
  DTF_RETURN_IF_ERROR(internal::LaunchError(kWhat));
  SumRuns<<<internal::BlocksFor(count * d), kThreadsPerBlock, 0, stream>>>(
      positions, begin, end, row, coef, dout.data(), count, d,
      grad->rows.data());
  return internal::LaunchError(kWhat);
}

}  // namespace dtf::kernels::cuda
