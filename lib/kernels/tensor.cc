#include "lib/kernels/tensor.h"

#include <cstdio>
#include <cstdlib>
#include <new>

#include "lib/base/strings.h"
#include "lib/kernels/internal/cuda_memory.h"
#include "lib/kernels/shape.h"

namespace dtf::kernels {
namespace internal {

void* AllocateAligned(size_t bytes) {
  if (bytes == 0) return nullptr;
  return ::operator new (bytes, std::align_val_t{64});
}

void FreeAligned(void* p) {
  if (p != nullptr) ::operator delete (p, std::align_val_t{64});
}

void* Allocate(Memory memory, size_t bytes) {
  if (memory == Memory::kHost || bytes == 0) return AllocateAligned(bytes);
  return CudaAllocate(memory, bytes);
}

void Free(Memory memory, void* p) {
  if (p == nullptr) return;
  if (memory == Memory::kHost) {
    FreeAligned(p);
  } else {
    CudaFree(memory, p);
  }
}

void CopyBytes(void* dst, Memory dst_memory, const void* src, Memory src_memory,
               size_t bytes) {
  if (bytes == 0) return;
  if (dst_memory != Memory::kDevice && src_memory != Memory::kDevice) {
    std::memcpy(dst, src, bytes);
    return;
  }
  CudaCopy(dst, src, bytes);
}

}  // namespace internal

namespace {

// Shapes reach a tensor validated (the job file's caps, Model's layout
// check); one that is not is a bug, stopped here rather than overflowing.
int64_t NumElements(std::span<const int64_t> shape) {
  StatusOr<int64_t> n = CheckedByteSize(shape, sizeof(float));
  if (!n.ok()) {
    std::fprintf(stderr, "Tensor: %s\n", n.status().ToString().c_str());
    std::abort();
  }
  return *n / int64_t{sizeof(float)};
}

}  // namespace

Tensor Tensor::Empty(std::span<const int64_t> shape, Memory memory) {
  Tensor t;
  t.ResizeIn(memory, shape);
  return t;
}

Tensor Tensor::Filled(std::span<const int64_t> shape, float value) {
  Tensor t = Empty(shape);
  std::fill_n(t.data(), t.size(), value);
  return t;
}

Tensor Tensor::FromValues(std::initializer_list<int64_t> shape,
                          std::span<const float> values) {
  Tensor t = Empty(shape);
  if (static_cast<int64_t>(values.size()) != t.size()) {
    std::fprintf(stderr, "Tensor::FromValues: %zu values for shape %s\n",
                 values.size(), ShapeString(t.shape()).c_str());
    std::abort();
  }
  if (!values.empty()) {
    std::memcpy(t.data(), values.data(), values.size() * sizeof(float));
  }
  return t;
}

void Tensor::Resize(std::span<const int64_t> shape) {
  shape_.assign(shape.begin(), shape.end());
  storage_.Resize(NumElements(shape));
}

void Tensor::ResizeIn(Memory memory, std::span<const int64_t> shape) {
  shape_.assign(shape.begin(), shape.end());
  storage_.ResizeIn(memory, NumElements(shape));
}

Tensor Tensor::Clone() const { return CloneIn(memory()); }

Tensor Tensor::CloneIn(Memory memory) const {
  Tensor t;
  t.shape_ = shape_;
  t.storage_ = storage_.CloneIn(memory);
  return t;
}

std::string ShapeString(std::span<const int64_t> shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    StrAppend(&out, shape[i]);
  }
  out += "]";
  return out;
}

StatusOr<int64_t> CheckedNumElements(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) {
      return InvalidArgumentError(
          StrCat("shape ", ShapeString(shape), ": negative dimension ", d));
    }
    if (__builtin_mul_overflow(n, d, &n)) {
      return InvalidArgumentError(
          StrCat("shape ", ShapeString(shape), ": more than 2^63 elements"));
    }
  }
  return n;
}

StatusOr<int64_t> CheckedByteSize(std::span<const int64_t> shape,
                                  int64_t element_bytes) {
  DTF_ASSIGN_OR_RETURN(const int64_t n, CheckedNumElements(shape));
  int64_t bytes = 0;
  if (element_bytes <= 0 || __builtin_mul_overflow(n, element_bytes, &bytes)) {
    return InvalidArgumentError(StrCat("shape ", ShapeString(shape), ": ", n,
                                       " elements of ", element_bytes,
                                       " bytes do not fit in 2^63 bytes"));
  }
  return bytes;
}

Status CheckSparseIds(const SparseIds& ids, const IdTensor* host_splits) {
  const IdTensor& splits =
      host_splits != nullptr ? *host_splits : ids.row_splits;
  if (splits.empty()) {
    return InvalidArgumentError(
        "sparse ids: row_splits is empty; a batch of B rows needs B + 1 "
        "splits");
  }
  if (splits[0] != 0) {
    return InvalidArgumentError(
        StrCat("sparse ids: row_splits[0] is ", splits[0], ", expected 0"));
  }
  for (int64_t b = 1; b < splits.size(); ++b) {
    if (splits[b] < splits[b - 1]) {
      return InvalidArgumentError(StrCat("sparse ids: row_splits decreases at ",
                                         b, " (", splits[b - 1], " -> ",
                                         splits[b], ")"));
    }
  }
  if (splits[splits.size() - 1] != ids.ids.size()) {
    return InvalidArgumentError(
        StrCat("sparse ids: row_splits ends at ", splits[splits.size() - 1],
               " but there are ", ids.ids.size(), " ids"));
  }
  if (ids.has_weights() && ids.weights.size() != ids.ids.size()) {
    return InvalidArgumentError(StrCat("sparse ids: ", ids.weights.size(),
                                       " weights for ", ids.ids.size(),
                                       " ids"));
  }
  return OkStatus();
}

}  // namespace dtf::kernels
