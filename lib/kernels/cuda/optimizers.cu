// The four optimizers' updates as one elementwise kernel each, run over a
// dense variable or over the rows of a sparse gradient. Every element is
// updated by exactly one thread with the CPU kernels' equations, so results
// never depend on the launch; the sparse ids are unique, so no two threads
// touch the same row.
#include <cstdint>

#include "lib/kernels/cuda/cuda_state.h"
#include "lib/kernels/cuda/launch.h"
#include "lib/kernels/cuda/optimizers.h"

namespace dtf::kernels::cuda {
namespace {

using internal::kThreadsPerBlock;

// Each op updates element i of the param and slots from element k of the
// gradient (i == k for a dense update). The slots an optimizer lacks are
// nullptr and never read.
struct SgdOp {
  float lr;
  __device__ void operator()(int64_t i, int64_t k, float* w, const float* g,
                             float*, float*) const {
    w[i] -= lr * g[k];
  }
};

template <bool kNesterov>
struct MomentumOp {
  float lr;
  float momentum;
  __device__ void operator()(int64_t i, int64_t k, float* w, const float* g,
                             float* v, float*) const {
    const float gk = g[k];
    const float vi = momentum * v[i] - lr * gk;
    v[i] = vi;
    if constexpr (kNesterov) {
      w[i] += momentum * vi - lr * gk;
    } else {
      w[i] += vi;
    }
  }
};

struct AdagradOp {
  float lr;
  float epsilon;
  __device__ void operator()(int64_t i, int64_t k, float* w, const float* g,
                             float* a, float*) const {
    const float gk = g[k];
    const float ai = a[i] + gk * gk;
    a[i] = ai;
    w[i] -= lr * gk / (sqrtf(ai) + epsilon);
  }
};

struct AdamOp {
  AdamUpdate u;
  __device__ void operator()(int64_t i, int64_t k, float* w, const float* g,
                             float* m, float* v) const {
    const float gk = g[k];
    const float mi = m[i] + (gk - m[i]) * u.one_minus_beta_1;
    const float vi = v[i] + (gk * gk - v[i]) * u.one_minus_beta_2;
    m[i] = mi;
    v[i] = vi;
    w[i] -= u.lr_t * mi / (sqrtf(vi) + u.epsilon);
  }
};

// kSqrt: lr_power == -0.5, where x^-p is sqrt(x), as on the CPU.
template <bool kSqrt>
struct FtrlOp {
  float lr;
  float lr_power;
  float l1;
  float two_l2;
  float two_shrinkage;

  __device__ float Pow(float x) const {
    if constexpr (kSqrt) {
      return sqrtf(x);
    } else {
      return powf(x, -lr_power);
    }
  }

  __device__ void operator()(int64_t i, int64_t k, float* w, const float* g,
                             float* a, float* z) const {
    const float gk = g[k];
    const float wi = w[i];
    const float ai = a[i];
    const float g_shrunk = gk + two_shrinkage * wi;
    const float new_a = ai + gk * gk;
    const float new_a_pow = Pow(new_a);
    const float zi = z[i] + (g_shrunk - (new_a_pow - Pow(ai)) / lr * wi);
    const float quadratic = new_a_pow / lr + two_l2;
    z[i] = zi;
    w[i] = fabsf(zi) > l1 ? (copysignf(l1, zi) - zi) / quadratic : 0.0f;
    a[i] = new_a;
  }
};

template <typename Op>
__global__ void DenseKernel(Op op, float* w, const float* g, float* s0,
                            float* s1, int64_t n) {
  DTF_CUDA_LOOP(i, n) { op(i, i, w, g, s0, s1); }
}

// One thread per element of the [U x D] gradient rows: element k = r * d + j
// updates element ids[r] * d + j of the param and slots.
template <typename Op>
__global__ void SparseKernel(Op op, float* w, const float* g,
                             const int64_t* ids, float* s0, float* s1,
                             int64_t n, int64_t d) {
  DTF_CUDA_LOOP(k, n) {
    const int64_t r = k / d;
    op(ids[r] * d + (k - r * d), k, w, g, s0, s1);
  }
}

// fault[0] = the least index i whose id is out of [0, rows) or not above
// ids[i - 1]. fault[0] starts at ~0, so it stays there when every id is fine;
// the minimum does not depend on the order of the atomics.
__global__ void FirstBadId(const int64_t* ids, int64_t n, int64_t rows,
                           unsigned long long* fault) {
  DTF_CUDA_LOOP(i, n) {
    const int64_t id = ids[i];
    if (id < 0 || id >= rows || (i > 0 && id <= ids[i - 1])) {
      atomicMin(fault, static_cast<unsigned long long>(i));
    }
  }
}

// fault[1], fault[2] = ids[i], ids[i - 1] (0 for i == 0) of the fault found,
// so that the host reads everything back with one copy. One thread.
__global__ void FetchBadIds(const int64_t* ids, int64_t n,
                            unsigned long long* fault) {
  const unsigned long long i = fault[0];
  if (i >= static_cast<unsigned long long>(n)) return;
  fault[1] = static_cast<unsigned long long>(ids[i]);
  fault[2] = i > 0 ? static_cast<unsigned long long>(ids[i - 1]) : 0ull;
}

float* SlotOrNull(OptimizerState* state, int i) {
  return state->num_slots() > i ? state->slot(i).data() : nullptr;
}

template <typename Op>
Status LaunchDense(const Context& ctx, const char* what, const Op& op,
                   Tensor* param, const Tensor& grad, OptimizerState* state) {
  cudaStream_t stream = internal::StreamFor(ctx);
  const int64_t n = param->size();
  if (n == 0) return OkStatus();
  DenseKernel<<<internal::BlocksFor(n), kThreadsPerBlock, 0, stream>>>(
      op, param->data(), grad.data(), SlotOrNull(state, 0),
      SlotOrNull(state, 1), n);
  return internal::LaunchError(what);
}

template <typename Op>
Status LaunchSparse(const Context& ctx, const char* what, const Op& op,
                    Tensor* param, const SparseGrad& grad,
                    OptimizerState* state) {
  cudaStream_t stream = internal::StreamFor(ctx);
  const int64_t d = param->cols();
  const int64_t n = grad.ids.size() * d;
  if (n == 0) return OkStatus();
  SparseKernel<<<internal::BlocksFor(n), kThreadsPerBlock, 0, stream>>>(
      op, param->data(), grad.rows.data(), grad.ids.data(),
      SlotOrNull(state, 0), SlotOrNull(state, 1), n, d);
  return internal::LaunchError(what);
}

// Calls f with the SGD op the state selects: plain without a slot, else
// momentum (nesterov or not), as the CPU kernel decides.
template <typename F>
Status WithSgdOp(const SgdUpdate& u, const OptimizerState& state, F&& f) {
  if (state.num_slots() == 0) return f(SgdOp{u.lr});
  if (u.nesterov) return f(MomentumOp<true>{u.lr, u.momentum});
  return f(MomentumOp<false>{u.lr, u.momentum});
}

template <typename F>
Status WithFtrlOp(const FtrlUpdate& u, F&& f) {
  const float two_l2 = 2.0f * u.l2;
  const float two_shrinkage = 2.0f * u.l2_shrinkage;
  if (u.lr_power == -0.5f) {
    return f(FtrlOp<true>{u.lr, u.lr_power, u.l1, two_l2, two_shrinkage});
  }
  return f(FtrlOp<false>{u.lr, u.lr_power, u.l1, two_l2, two_shrinkage});
}

}  // namespace

Status FindSparseIdFault(const Context& ctx, const IdTensor& ids, int64_t rows,
                         SparseIdFault* fault) {
  cudaStream_t stream = internal::StreamFor(ctx);
  *fault = SparseIdFault{};
  const int64_t n = ids.size();
  if (n == 0) return OkStatus();
  constexpr size_t kBytes = 3 * sizeof(unsigned long long);
  internal::CudaState& state = internal::CudaStateOf(ctx);
  auto* device = static_cast<unsigned long long*>(state.DeviceScratch(kBytes));
  auto* host = static_cast<unsigned long long*>(state.HostScratch(kBytes));
  // All ones: no fault found yet.
  DTF_RETURN_IF_ERROR(internal::CudaError(
      cudaMemsetAsync(device, 0xff, sizeof(unsigned long long), stream),
      "sparse gradient id check"));
  FirstBadId<<<internal::BlocksFor(n), kThreadsPerBlock, 0, stream>>>(
      ids.data(), n, rows, device);
  DTF_RETURN_IF_ERROR(internal::LaunchError("sparse gradient id check"));
  FetchBadIds<<<1, 1, 0, stream>>>(ids.data(), n, device);
  DTF_RETURN_IF_ERROR(internal::LaunchError("sparse gradient id check"));
  DTF_RETURN_IF_ERROR(internal::CudaError(
      cudaMemcpyAsync(host, device, kBytes, cudaMemcpyDeviceToHost, stream),
      "sparse gradient id check"));
  DTF_RETURN_IF_ERROR(internal::CudaError(cudaStreamSynchronize(stream),
                                          "sparse gradient id check"));
  if (host[0] < static_cast<unsigned long long>(n)) {
    fault->index = static_cast<int64_t>(host[0]);
    fault->id = static_cast<int64_t>(host[1]);
    fault->previous = static_cast<int64_t>(host[2]);
  }
  return OkStatus();
}

Status ApplyDense(const Context& ctx, const SgdUpdate& update, Tensor* param,
                  const Tensor& grad, OptimizerState* state) {
  return WithSgdOp(update, *state, [&](const auto& op) {
    return LaunchDense(ctx, "SGD", op, param, grad, state);
  });
}

Status ApplyDense(const Context& ctx, const AdagradUpdate& update,
                  Tensor* param, const Tensor& grad, OptimizerState* state) {
  return LaunchDense(ctx, "Adagrad", AdagradOp{update.lr, update.epsilon},
                     param, grad, state);
}

Status ApplyDense(const Context& ctx, const AdamUpdate& update, Tensor* param,
                  const Tensor& grad, OptimizerState* state) {
  return LaunchDense(ctx, "Adam", AdamOp{update}, param, grad, state);
}

Status ApplyDense(const Context& ctx, const FtrlUpdate& update, Tensor* param,
                  const Tensor& grad, OptimizerState* state) {
  return WithFtrlOp(update, [&](const auto& op) {
    return LaunchDense(ctx, "Ftrl", op, param, grad, state);
  });
}

Status ApplySparse(const Context& ctx, const SgdUpdate& update, Tensor* param,
                   const SparseGrad& grad, OptimizerState* state) {
  return WithSgdOp(update, *state, [&](const auto& op) {
    return LaunchSparse(ctx, "SGD", op, param, grad, state);
  });
}

Status ApplySparse(const Context& ctx, const AdagradUpdate& update,
                   Tensor* param, const SparseGrad& grad,
                   OptimizerState* state) {
  return LaunchSparse(ctx, "Adagrad", AdagradOp{update.lr, update.epsilon},
                      param, grad, state);
}

Status ApplySparse(const Context& ctx, const AdamUpdate& update, Tensor* param,
                   const SparseGrad& grad, OptimizerState* state) {
  return LaunchSparse(ctx, "Adam", AdamOp{update}, param, grad, state);
}

Status ApplySparse(const Context& ctx, const FtrlUpdate& update, Tensor* param,
                   const SparseGrad& grad, OptimizerState* state) {
  return WithFtrlOp(update, [&](const auto& op) {
    return LaunchSparse(ctx, "Ftrl", op, param, grad, state);
  });
}

}  // namespace dtf::kernels::cuda
