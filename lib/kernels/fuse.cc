// Packing gradients into buckets and back (fuse.h).
#include "lib/kernels/fuse.h"

#include <algorithm>

#include "lib/base/strings.h"
#include "lib/kernels/cuda/fuse.h"
#include "lib/kernels/internal/dispatch.h"
#include "lib/kernels/internal/parallel.h"

namespace dtf::kernels {
namespace {

// InvalidArgument unless [offset, offset + n) lies inside a bucket of
// `bucket_size` elements.
Status CheckRange(int64_t offset, int64_t n, int64_t bucket_size,
                  std::string_view what) {
  if (offset >= 0 && n >= 0 && offset <= bucket_size &&
      n <= bucket_size - offset) {
    return OkStatus();
  }
  return InvalidArgumentError(StrCat(what, ": ", n, " elements at offset ",
                                     offset, " do not fit a bucket of ",
                                     bucket_size));
}

int64_t NumElements(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace

Status PackDense(const Context& ctx, const Tensor& grad, Tensor* bucket,
                 int64_t offset) {
  DTF_RETURN_IF_ERROR(internal::CheckDevice(ctx, grad.device(), "PackDense"));
  DTF_RETURN_IF_ERROR(
      internal::CheckDevice(ctx, bucket->device(), "PackDense"));
  DTF_RETURN_IF_ERROR(
      CheckRange(offset, grad.size(), bucket->size(), "PackDense"));
  DTF_CUDA_DISPATCH(ctx, cuda::PackDense(ctx, grad, bucket, offset));
  std::copy_n(grad.data(), grad.size(), bucket->data() + offset);
  return OkStatus();
}

Status PackSparse(const Context& ctx, const SparseGrad& grad, int64_t num_rows,
                  Tensor* bucket, int64_t offset) {
  const Tensor& rows = grad.rows;
  if (rows.rank() != 2 || rows.rows() != grad.ids.size() || num_rows < 0) {
    return InvalidArgumentError(
        StrCat("PackSparse: rows ", ShapeString(rows.shape()), " and ",
               grad.ids.size(), " ids do not make a gradient of ", num_rows,
               " table rows"));
  }
  DTF_RETURN_IF_ERROR(internal::CheckDevice(ctx, rows.device(), "PackSparse"));
  DTF_RETURN_IF_ERROR(
      internal::CheckDevice(ctx, grad.ids.device(), "PackSparse"));
  DTF_RETURN_IF_ERROR(
      internal::CheckDevice(ctx, bucket->device(), "PackSparse"));
  const int64_t cols = rows.cols();
  DTF_RETURN_IF_ERROR(
      CheckRange(offset, num_rows * cols, bucket->size(), "PackSparse"));
  DTF_CUDA_DISPATCH(
      ctx, cuda::PackSparse(ctx, grad, num_rows, cols, bucket, offset));
  const int64_t* ids = grad.ids.data();
  for (int64_t u = 0; u < grad.ids.size(); ++u) {
    if (ids[u] < 0 || ids[u] >= num_rows) {
      return InvalidArgumentError(StrCat("PackSparse: id ", ids[u],
                                         " is outside a table of ", num_rows,
                                         " rows"));
    }
  }
  float* dense = bucket->data() + offset;
  std::fill_n(dense, num_rows * cols, 0.0f);
  const float* src = rows.data();
  for (int64_t u = 0; u < grad.ids.size(); ++u) {
    float* row = dense + ids[u] * cols;
    const float* g = src + u * cols;
    for (int64_t j = 0; j < cols; ++j) row[j] += g[j];
  }
  return OkStatus();
}

Status Unpack(const Context& ctx, const Tensor& bucket, int64_t offset,
              std::span<const int64_t> shape, Tensor* out) {
  DTF_RETURN_IF_ERROR(internal::CheckDevice(ctx, bucket.device(), "Unpack"));
  if (out == &bucket) {
    return InvalidArgumentError("Unpack: out must not alias the bucket");
  }
  for (int64_t d : shape) {
    if (d < 0) {
      return InvalidArgumentError(
          StrCat("Unpack: shape ", ShapeString(shape), " is negative"));
    }
  }
  DTF_RETURN_IF_ERROR(
      CheckRange(offset, NumElements(shape), bucket.size(), "Unpack"));
  internal::PlaceOutput(ctx, out, shape);
  DTF_CUDA_DISPATCH(ctx, cuda::Unpack(ctx, bucket, offset, out));
  std::copy_n(bucket.data() + offset, out->size(), out->data());
  return OkStatus();
}

}  // namespace dtf::kernels
