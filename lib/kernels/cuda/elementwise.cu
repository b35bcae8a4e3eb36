#include <vector>

#include "lib/kernels/cuda/cuda_state.h"
#include "lib/kernels/cuda/elementwise.h"
#include "lib/kernels/cuda/launch.h"

namespace dtf::kernels::cuda {
namespace {

using internal::kThreadsPerBlock;

// Parts one ConcatColumns / SplitColumns launch handles: their pointers and
// column ranges travel as a kernel argument (well under its 4 KiB limit), so
// nothing is uploaded; more parts take more launches.
constexpr int kMaxPartsPerLaunch = 32;

struct ReluOp {
  __device__ float operator()(float x) const { return fmaxf(x, 0.0f); }
};
struct SigmoidOp {
  // exp(-x) overflows to inf for very negative x, giving 0, never NaN.
  __device__ float operator()(float x) const {
    return 1.0f / (1.0f + expf(-x));
  }
};
struct TanhOp {
  __device__ float operator()(float x) const { return tanhf(x); }
};

struct ReluGradOp {
  __device__ float operator()(float y, float dy) const {
    return y > 0.0f ? dy : 0.0f;
  }
};
struct SigmoidGradOp {
  // In the CPU kernel's order: (dy * y) * (1 - y).
  __device__ float operator()(float y, float dy) const {
    return dy * y * (1.0f - y);
  }
};
struct TanhGradOp {
  __device__ float operator()(float y, float dy) const {
    return dy * (1.0f - y * y);
  }
};

// y may be x: each element is read before it is written, by one thread.
template <typename Op>
__global__ void UnaryKernel(const float* x, float* y, int64_t n, Op op) {
  DTF_CUDA_LOOP(i, n) { y[i] = op(x[i]); }
}

// dx may be y or dy.
template <typename Op>
__global__ void BinaryKernel(const float* y, const float* dy, float* dx,
                             int64_t n, Op op) {
  DTF_CUDA_LOOP(i, n) { dx[i] = op(y[i], dy[i]); }
}

__global__ void DropoutKernel(const float* x, internal::DropoutDraw draw,
                              int64_t n, float* y, float* mask) {
  DTF_CUDA_LOOP(i, n) {
    const float keep = internal::DropoutKeep(draw, i);
    const float v = x[i];
    mask[i] = keep;
    y[i] = v * keep;
  }
}

__global__ void MultiplyKernel(const float* a, const float* b, float* out,
                               int64_t n) {
  DTF_CUDA_LOOP(i, n) { out[i] = a[i] * b[i]; }
}

__global__ void AddKernel(const float* x, float* y, int64_t n) {
  DTF_CUDA_LOOP(i, n) { y[i] += x[i]; }
}

// Up to kMaxPartsPerLaunch parts, none of them empty: part k holds the
// columns [begin[k], begin[k + 1]) of the joined matrix.
template <typename T>
struct PartTable {
  T* data[kMaxPartsPerLaunch];
  int64_t begin[kMaxPartsPerLaunch + 1];
  int count;
};

// The part of `table` holding joined column j, begin[0] <= j < begin[count].
template <typename T>
__device__ int PartOf(const PartTable<T>& table, int64_t j) {
  int k = 0;
  while (j >= table.begin[k + 1]) ++k;
  return k;
}

// out[i, j] = the part's element for every row i and every column j of the
// table's parts; out has `total` columns. Threads run along out's rows, so
// writes are coalesced.
__global__ void ConcatKernel(PartTable<const float> table, float* out,
                             int64_t rows, int64_t total) {
  const int64_t c0 = table.begin[0];
  const int64_t width = table.begin[table.count] - c0;
  DTF_CUDA_LOOP(t, rows * width) {
    const int64_t i = t / width;
    const int64_t j = c0 + t % width;
    const int k = PartOf(table, j);
    const int64_t cols = table.begin[k + 1] - table.begin[k];
    out[i * total + j] = table.data[k][i * cols + (j - table.begin[k])];
  }
}

// The reverse: each part's element from x [rows x total], read along rows.
__global__ void SplitKernel(const float* x, PartTable<float> table,
                            int64_t rows, int64_t total) {
  const int64_t c0 = table.begin[0];
  const int64_t width = table.begin[table.count] - c0;
  DTF_CUDA_LOOP(t, rows * width) {
    const int64_t i = t / width;
    const int64_t j = c0 + t % width;
    const int k = PartOf(table, j);
    const int64_t cols = table.begin[k + 1] - table.begin[k];
    table.data[k][i * cols + (j - table.begin[k])] = x[i * total + j];
  }
}

// mean_stddev holds the f means, then the f deviations.
__global__ void NormalizeKernel(const float* in, const float* mean_stddev,
                                int64_t f, float min_stddev, int64_t n,
                                float* out) {
  DTF_CUDA_LOOP(i, n) {
    const int64_t j = i % f;
    const float s = mean_stddev[f + j];
    // As std::max(s, min_stddev) on the CPU.
    out[i] = (in[i] - mean_stddev[j]) / (s < min_stddev ? min_stddev : s);
  }
}

template <typename Op>
Status LaunchUnary(const Context& ctx, const char* name, const Tensor& x,
                   Tensor* y, Op op) {
  cudaStream_t stream = internal::StreamFor(ctx);
  const int64_t n = x.size();
  if (n == 0) return OkStatus();
  UnaryKernel<<<internal::BlocksFor(n), kThreadsPerBlock, 0, stream>>>(
      x.data(), y->data(), n, op);
  return internal::LaunchError(name);
}

template <typename Op>
Status LaunchBinary(const Context& ctx, const char* name, const Tensor& y,
                    const Tensor& dy, Tensor* dx, Op op) {
  cudaStream_t stream = internal::StreamFor(ctx);
  const int64_t n = y.size();
  if (n == 0) return OkStatus();
  BinaryKernel<<<internal::BlocksFor(n), kThreadsPerBlock, 0, stream>>>(
      y.data(), dy.data(), dx->data(), n, op);
  return internal::LaunchError(name);
}

// Runs `launch(table)` for consecutive groups of the non-empty parts, each
// group at most kMaxPartsPerLaunch parts. data(p) is part p's pointer.
template <typename T, typename Data, typename Launch>
Status ForPartGroups(std::span<const int64_t> widths, Data data,
                     Launch launch) {
  PartTable<T> table{};
  int64_t column = 0;
  for (size_t p = 0; p < widths.size(); ++p) {
    if (widths[p] == 0) continue;
    if (table.count == 0) table.begin[0] = column;
    table.data[table.count] = data(p);
    column += widths[p];
    table.begin[++table.count] = column;
    if (table.count == kMaxPartsPerLaunch) {
      DTF_RETURN_IF_ERROR(launch(table));
      table.count = 0;
    }
  }
  if (table.count > 0) return launch(table);
  return OkStatus();
}

}  // namespace

Status Relu(const Context& ctx, const Tensor& x, Tensor* y) {
  return LaunchUnary(ctx, "Relu", x, y, ReluOp{});
}

Status Sigmoid(const Context& ctx, const Tensor& x, Tensor* y) {
  return LaunchUnary(ctx, "Sigmoid", x, y, SigmoidOp{});
}

Status Tanh(const Context& ctx, const Tensor& x, Tensor* y) {
  return LaunchUnary(ctx, "Tanh", x, y, TanhOp{});
}

Status ReluGrad(const Context& ctx, const Tensor& y, const Tensor& dy,
                Tensor* dx) {
  return LaunchBinary(ctx, "ReluGrad", y, dy, dx, ReluGradOp{});
}

Status SigmoidGrad(const Context& ctx, const Tensor& y, const Tensor& dy,
                   Tensor* dx) {
  return LaunchBinary(ctx, "SigmoidGrad", y, dy, dx, SigmoidGradOp{});
}

Status TanhGrad(const Context& ctx, const Tensor& y, const Tensor& dy,
                Tensor* dx) {
  return LaunchBinary(ctx, "TanhGrad", y, dy, dx, TanhGradOp{});
}

Status Dropout(const Context& ctx, const Tensor& x,
               const internal::DropoutDraw& draw, Tensor* y, Tensor* mask) {
  cudaStream_t stream = internal::StreamFor(ctx);
  const int64_t n = x.size();
  if (n == 0) return OkStatus();
  DropoutKernel<<<internal::BlocksFor(n), kThreadsPerBlock, 0, stream>>>(
      x.data(), draw, n, y->data(), mask->data());
  return internal::LaunchError("Dropout");
}

Status DropoutGrad(const Context& ctx, const Tensor& dy, const Tensor& mask,
                   Tensor* dx) {
  cudaStream_t stream = internal::StreamFor(ctx);
  const int64_t n = dy.size();
  if (n == 0) return OkStatus();
  MultiplyKernel<<<internal::BlocksFor(n), kThreadsPerBlock, 0, stream>>>(
      dy.data(), mask.data(), dx->data(), n);
  return internal::LaunchError("DropoutGrad");
}

Status ConcatColumns(const Context& ctx, std::span<const Tensor* const> parts,
                     Tensor* out) {
  cudaStream_t stream = internal::StreamFor(ctx);
  const int64_t rows = out->rows();
  const int64_t total = out->cols();
  if (rows == 0 || total == 0) return OkStatus();
  std::vector<int64_t> widths(parts.size());
  for (size_t p = 0; p < parts.size(); ++p) widths[p] = parts[p]->cols();
  return ForPartGroups<const float>(
      widths, [&](size_t p) { return parts[p]->data(); },
      [&](const PartTable<const float>& table) {
        const int64_t n = rows * (table.begin[table.count] - table.begin[0]);
        ConcatKernel<<<internal::BlocksFor(n), kThreadsPerBlock, 0, stream>>>(
            table, out->data(), rows, total);
        return internal::LaunchError("ConcatColumns");
      });
}

Status SplitColumns(const Context& ctx, const Tensor& x,
                    std::span<const int64_t> widths,
                    std::span<Tensor* const> parts) {
  cudaStream_t stream = internal::StreamFor(ctx);
  const int64_t rows = x.rows();
  const int64_t total = x.cols();
  if (rows == 0 || total == 0) return OkStatus();
  return ForPartGroups<float>(
      widths, [&](size_t p) { return parts[p]->data(); },
      [&](const PartTable<float>& table) {
        const int64_t n = rows * (table.begin[table.count] - table.begin[0]);
        SplitKernel<<<internal::BlocksFor(n), kThreadsPerBlock, 0, stream>>>(
            x.data(), table, rows, total);
        return internal::LaunchError("SplitColumns");
      });
}

Status AddInPlace(const Context& ctx, const Tensor& x, Tensor* y) {
  cudaStream_t stream = internal::StreamFor(ctx);
  const int64_t n = x.size();
  if (n == 0) return OkStatus();
  AddKernel<<<internal::BlocksFor(n), kThreadsPerBlock, 0, stream>>>(
      x.data(), y->data(), n);
  return internal::LaunchError("AddInPlace");
}

Status Normalize(const Context& ctx, const Tensor& values, int64_t f,
                 std::span<const float> mean, std::span<const float> stddev,
                 float min_stddev, Tensor* out) {
  cudaStream_t stream = internal::StreamFor(ctx);
  const int64_t n = values.size();
  if (n == 0 || f == 0) return OkStatus();
  // Staged in pageable memory of our own: cudaMemcpyAsync returns once it
  // has taken the bytes, so neither this vector nor the caller's arrays
  // (even pinned ones) need outlive the call.
  std::vector<float> host(mean.begin(), mean.end());
  host.insert(host.end(), stddev.begin(), stddev.end());
  const size_t bytes = host.size() * sizeof(float);
  float* mean_stddev =
      static_cast<float*>(internal::CudaStateOf(ctx).DeviceScratch(bytes));
  DTF_RETURN_IF_ERROR(
      internal::CudaError(cudaMemcpyAsync(mean_stddev, host.data(), bytes,
                                          cudaMemcpyHostToDevice, stream),
                          "Normalize (uploading mean and stddev)"));
  NormalizeKernel<<<internal::BlocksFor(n), kThreadsPerBlock, 0, stream>>>(
      values.data(), mean_stddev, f, min_stddev, n, out->data());
  return internal::LaunchError("Normalize");
}

}  // namespace dtf::kernels::cuda
