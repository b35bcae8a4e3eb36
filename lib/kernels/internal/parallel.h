// How kernels split work over the context's threads, and the device check
// every kernel makes. Free of Eigen, so kernels that only loop stay cheap to
// compile.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <span>
#include <string_view>

#include "lib/base/status.h"
#include "lib/base/strings.h"
#include "lib/kernels/context.h"
#include "lib/kernels/tensor.h"

namespace dtf::kernels::internal {

// Work, in CPU cycles, below which an operation runs on the calling thread: a
// hand-off to the pool and back costs a few microseconds.
inline constexpr double kMinParallelCycles = 100000;

// The cost per element of a memory-bound elementwise loop (add, max,
// multiply): such a loop gains from more threads only once its arrays are
// megabytes, so it is split from about a million elements.
inline constexpr double kStreamingCycles = 0.1;

// Splits [0, n) into ranges run on the context's pool (and the caller), with
// Eigen's cost model choosing how many. Returns when all are done.
void RunOnPool(const Context& ctx, int64_t n, double cycles_per_item,
               const std::function<void(int64_t, int64_t)>& f);

// Runs f(begin, end) over disjoint ranges covering [0, n): on the pool when
// n * cycles_per_item is large enough, else as f(0, n) on this thread. Every
// item is handled by exactly one call, so results never depend on the split.
template <typename F>
void ParallelFor(const Context& ctx, int64_t n, double cycles_per_item, F&& f) {
  if (n <= 0) return;
  if (ctx.num_threads() <= 1 ||
      static_cast<double>(n) * cycles_per_item < kMinParallelCycles) {
    f(int64_t{0}, n);
    return;
  }
  RunOnPool(ctx, n, cycles_per_item,
            [&f](int64_t begin, int64_t end) { f(begin, end); });
}

// Sizes a pure output (one whose old contents are never read) to `shape` on
// the context's device: kept where it is when it already lives there (so a
// pinned host tensor stays pinned), moved otherwise. Inputs and in-place
// operands are checked with CheckDevice instead.
inline void PlaceOutput(const Context& ctx, Tensor* t,
                        std::span<const int64_t> shape) {
  if (t->device() == ctx.device()) {
    t->Resize(shape);
  } else {
    t->ResizeIn(ctx.memory(), shape);
  }
}
inline void PlaceOutput(const Context& ctx, Tensor* t,
                        std::initializer_list<int64_t> shape) {
  PlaceOutput(ctx, t, std::span<const int64_t>(shape.begin(), shape.size()));
}
template <typename T>
void PlaceOutput(const Context& ctx, Buffer<T>* b, int64_t n) {
  if (b->device() == ctx.device()) {
    b->Resize(n);
  } else {
    b->ResizeIn(ctx.memory(), n);
  }
}

// InvalidArgument unless `device` is the context's device.
inline Status CheckDevice(const Context& ctx, Device device,
                          std::string_view what) {
  if (device == ctx.device()) return OkStatus();
  return InvalidArgumentError(
      StrCat(what, ": tensor is on another device than the context"));
}

}  // namespace dtf::kernels::internal
