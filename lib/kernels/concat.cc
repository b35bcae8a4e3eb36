// ConcatColumns, SplitColumns and AddInPlace: row loops on the CPU,
// cuda/elementwise.cu on CUDA.
#include "lib/kernels/concat.h"

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "lib/base/strings.h"
#include "lib/kernels/cuda/elementwise.h"
#include "lib/kernels/internal/dispatch.h"
#include "lib/kernels/internal/parallel.h"

namespace dtf::kernels {

Status ConcatColumns(const Context& ctx, std::span<const Tensor* const> parts,
                     Tensor* out) {
  constexpr std::string_view kOp = "ConcatColumns";
  if (parts.empty()) {
    return InvalidArgumentError(StrCat(kOp, ": no parts"));
  }
  int64_t n = -1;
  int64_t total = 0;
  for (size_t p = 0; p < parts.size(); ++p) {
    const Tensor* part = parts[p];
    if (part == nullptr || part == out) {
      return InvalidArgumentError(
          StrCat(kOp, ": part ", p, " is null or the output"));
    }
    if (part->rank() != 2 || (n >= 0 && part->rows() != n)) {
      return InvalidArgumentError(
          StrCat(kOp, ": part ", p, " ", ShapeString(part->shape()),
                 " is not a matrix with the rows of part 0 ",
                 ShapeString(parts[0]->shape())));
    }
    DTF_RETURN_IF_ERROR(internal::CheckDevice(ctx, part->device(), kOp));
    n = part->rows();
    total += part->cols();
  }
  internal::PlaceOutput(ctx, out, {n, total});
  DTF_CUDA_DISPATCH(ctx, cuda::ConcatColumns(ctx, parts, out));
  float* result = out->data();
  internal::ParallelFor(ctx, n,
                        internal::kStreamingCycles * static_cast<double>(total),
                        [&](int64_t lo, int64_t hi) {
                          for (int64_t i = lo; i < hi; ++i) {
                            float* row = result + i * total;
                            for (const Tensor* part : parts) {
                              const int64_t c = part->cols();
                              std::copy_n(part->data() + i * c, c, row);
                              row += c;
                            }
                          }
                        });
  return OkStatus();
}

Status SplitColumns(const Context& ctx, const Tensor& x,
                    std::span<const int64_t> widths,
                    std::span<Tensor* const> parts) {
  constexpr std::string_view kOp = "SplitColumns";
  if (x.rank() != 2) {
    return InvalidArgumentError(
        StrCat(kOp, ": x ", ShapeString(x.shape()), " must be a matrix"));
  }
  if (widths.empty() || widths.size() != parts.size()) {
    return InvalidArgumentError(
        StrCat(kOp, ": ", widths.size(), " widths for ", parts.size(),
               " parts; expected one each, at least 1"));
  }
  DTF_RETURN_IF_ERROR(internal::CheckDevice(ctx, x.device(), kOp));
  int64_t total = 0;
  for (size_t p = 0; p < parts.size(); ++p) {
    if (widths[p] < 0) {
      return InvalidArgumentError(
          StrCat(kOp, ": width ", p, " is negative (", widths[p], ")"));
    }
    total += widths[p];
    Tensor* part = parts[p];
    if (part == nullptr || part == &x ||
        std::find(parts.begin(), parts.begin() + static_cast<int64_t>(p),
                  part) != parts.begin() + static_cast<int64_t>(p)) {
      return InvalidArgumentError(
          StrCat(kOp, ": part ", p, " is null, x or an earlier part"));
    }
  }
  if (total != x.cols()) {
    return InvalidArgumentError(StrCat(kOp, ": widths sum to ", total,
                                       " but x ", ShapeString(x.shape()),
                                       " has ", x.cols(), " columns"));
  }
  const int64_t n = x.rows();
  for (size_t p = 0; p < parts.size(); ++p) {
    internal::PlaceOutput(ctx, parts[p], {n, widths[p]});
  }
  DTF_CUDA_DISPATCH(ctx, cuda::SplitColumns(ctx, x, widths, parts));
  const float* in = x.data();
  internal::ParallelFor(ctx, n,
                        internal::kStreamingCycles * static_cast<double>(total),
                        [&](int64_t lo, int64_t hi) {
                          for (int64_t i = lo; i < hi; ++i) {
                            const float* row = in + i * total;
                            for (size_t p = 0; p < parts.size(); ++p) {
                              const int64_t c = widths[p];
                              std::copy_n(row, c, parts[p]->data() + i * c);
                              row += c;
                            }
                          }
                        });
  return OkStatus();
}

Status AddInPlace(const Context& ctx, const Tensor& x, Tensor* y) {
  constexpr std::string_view kOp = "AddInPlace";
  if (x.shape() != y->shape()) {
    return InvalidArgumentError(StrCat(kOp, ": x ", ShapeString(x.shape()),
                                       " and y ", ShapeString(y->shape()),
                                       " differ in shape"));
  }
  DTF_RETURN_IF_ERROR(internal::CheckDevice(ctx, x.device(), kOp));
  DTF_RETURN_IF_ERROR(internal::CheckDevice(ctx, y->device(), kOp));
  DTF_CUDA_DISPATCH(ctx, cuda::AddInPlace(ctx, x, y));
  const float* in = x.data();
  float* out = y->data();
  internal::ParallelFor(ctx, x.size(), internal::kStreamingCycles,
                        [&](int64_t lo, int64_t hi) {
                          for (int64_t i = lo; i < hi; ++i) out[i] += in[i];
                        });
  return OkStatus();
}

}  // namespace dtf::kernels
