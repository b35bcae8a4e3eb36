// Tensors: dense float32 arrays and int64 id arrays that own their storage
// in one of three kinds of memory (Memory): 64-byte-aligned host memory,
// page-locked ("pinned") host memory that CUDA copies from and to without
// staging, or CUDA device memory. Layout is row-major: element (i, j) of a
// [rows x cols] tensor is data()[i * cols + j]. Host tensors (kHost and
// kPinnedHost) are on Device::kCpu; device tensors on Device::kCuda can only
// be read by kernels given a CUDA context, and moved with lib/kernels/
// transfer.h.
//
// Tensors are move-only; copying is explicit (Clone). An op writes its result
// into a caller-owned output tensor, which it resizes with Resize: storage is
// reallocated only when the new size exceeds the capacity, so a training loop
// that reuses its outputs allocates nothing in steady state.
//
// Not thread-safe: one writer at a time; concurrent reads are fine.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/status.h"

namespace dtf::kernels {

enum class Device { kCpu, kCuda };

// Where a tensor's storage lives. kPinnedHost and kDevice need a build with
// CUDA and a CUDA device; a Context::Cuda exists only then.
enum class Memory { kHost, kPinnedHost, kDevice };

inline Device DeviceOf(Memory memory) {
  return memory == Memory::kDevice ? Device::kCuda : Device::kCpu;
}

namespace internal {
// Returns 64-byte-aligned uninitialised storage of `bytes` bytes (nullptr for
// 0); aborts when memory is exhausted.
void* AllocateAligned(size_t bytes);
void FreeAligned(void* p);
// Uninitialised storage of `bytes` bytes in `memory` (nullptr for 0); aborts
// with a message when it cannot be had (out of memory, or no CUDA).
void* Allocate(Memory memory, size_t bytes);
void Free(Memory memory, void* p);
// Copies `bytes` bytes between any two kinds of memory; waits until done.
void CopyBytes(void* dst, Memory dst_memory, const void* src, Memory src_memory,
               size_t bytes);
}  // namespace internal

// A 1-D array of T in device memory. T is trivially copyable.
template <typename T>
class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&& other) noexcept { *this = std::move(other); }
  Buffer& operator=(Buffer&& other) noexcept {
    if (this != &other) {
      internal::Free(memory_, data_);
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      capacity_ = std::exchange(other.capacity_, 0);
      memory_ = other.memory_;
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { internal::Free(memory_, data_); }

  // `n` uninitialised elements in `memory`.
  static Buffer Empty(int64_t n, Memory memory = Memory::kHost) {
    Buffer b;
    b.ResizeIn(memory, n);
    return b;
  }
  static Buffer Filled(int64_t n, T value) {
    Buffer b = Empty(n);
    std::fill_n(b.data_, n, value);
    return b;
  }
  static Buffer Zeros(int64_t n) { return Filled(n, T{}); }
  static Buffer FromValues(std::span<const T> values) {
    Buffer b = Empty(static_cast<int64_t>(values.size()));
    if (!values.empty()) {
      std::memcpy(b.data_, values.data(), values.size() * sizeof(T));
    }
    return b;
  }
  static Buffer FromValues(std::initializer_list<T> values) {
    return FromValues(std::span<const T>(values.begin(), values.size()));
  }

  // Sets the size to `n` (>= 0). The first min(n, old size) elements are kept
  // when n <= capacity(); otherwise new storage is allocated and the contents
  // are unspecified.
  void Resize(int64_t n) {
    if (n > capacity_) {
      internal::Free(memory_, data_);
      data_ = nullptr;
      capacity_ = 0;
      data_ = static_cast<T*>(
          internal::Allocate(memory_, static_cast<size_t>(n) * sizeof(T)));
      capacity_ = n;
    }
    size_ = n;
  }
  // Resize, first moving the storage to `memory` (contents unspecified) when
  // it is elsewhere.
  void ResizeIn(Memory memory, int64_t n) {
    if (memory != memory_) {
      internal::Free(memory_, data_);
      data_ = nullptr;
      capacity_ = 0;
      memory_ = memory;
    }
    Resize(n);
  }
  // A copy in the same kind of memory.
  Buffer Clone() const { return CloneIn(memory_); }
  // A copy in `memory`.
  Buffer CloneIn(Memory memory) const {
    Buffer b = Empty(size_, memory);
    internal::CopyBytes(b.data_, memory, data_, memory_,
                        static_cast<size_t>(size_) * sizeof(T));
    return b;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  int64_t size() const { return size_; }
  int64_t capacity() const { return capacity_; }
  bool empty() const { return size_ == 0; }
  Device device() const { return DeviceOf(memory_); }
  Memory memory() const { return memory_; }
  // Element access; REQUIRES: device() == Device::kCpu and 0 <= i < size().
  T& operator[](int64_t i) { return data_[i]; }
  const T& operator[](int64_t i) const { return data_[i]; }
  std::span<T> span() { return {data_, static_cast<size_t>(size_)}; }
  std::span<const T> span() const {
    return {data_, static_cast<size_t>(size_)};
  }

 private:
  T* data_ = nullptr;
  int64_t size_ = 0;
  int64_t capacity_ = 0;
  Memory memory_ = Memory::kHost;
};

// Sparse ids (embedding rows, bucket ids, hashed ids).
using IdTensor = Buffer<int64_t>;

// A float32 tensor of any rank. A default-constructed Tensor has shape [0].
class Tensor {
 public:
  Tensor() : shape_{0} {}
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  // Uninitialised contents. REQUIRES: every dimension >= 0.
  static Tensor Empty(std::span<const int64_t> shape,
                      Memory memory = Memory::kHost);
  static Tensor Empty(std::initializer_list<int64_t> shape,
                      Memory memory = Memory::kHost) {
    return Empty(std::span<const int64_t>(shape.begin(), shape.size()), memory);
  }
  static Tensor Zeros(std::span<const int64_t> shape) {
    return Filled(shape, 0.0f);
  }
  static Tensor Zeros(std::initializer_list<int64_t> shape) {
    return Filled(shape, 0.0f);
  }
  static Tensor Filled(std::span<const int64_t> shape, float value);
  static Tensor Filled(std::initializer_list<int64_t> shape, float value) {
    return Filled(std::span<const int64_t>(shape.begin(), shape.size()), value);
  }
  // REQUIRES: values.size() equals the product of `shape`.
  static Tensor FromValues(std::initializer_list<int64_t> shape,
                           std::span<const float> values);
  static Tensor FromValues(std::initializer_list<int64_t> shape,
                           std::initializer_list<float> values) {
    return FromValues(shape,
                      std::span<const float>(values.begin(), values.size()));
  }

  // Gives the tensor `shape`, keeping storage when it is large enough (see
  // Buffer::Resize); contents are unspecified when the size grows.
  void Resize(std::span<const int64_t> shape);
  void Resize(std::initializer_list<int64_t> shape) {
    Resize(std::span<const int64_t>(shape.begin(), shape.size()));
  }
  // Resize, first moving the storage to `memory` (contents unspecified) when
  // it is elsewhere: how a kernel places its output on its context's device.
  void ResizeIn(Memory memory, std::span<const int64_t> shape);
  void ResizeIn(Memory memory, std::initializer_list<int64_t> shape) {
    ResizeIn(memory, std::span<const int64_t>(shape.begin(), shape.size()));
  }
  // A copy in the same kind of memory.
  Tensor Clone() const;
  // A copy in `memory` (a device-to-host or host-to-device copy that waits
  // until done; kernels' own copies use lib/kernels/transfer.h).
  Tensor CloneIn(Memory memory) const;

  float* data() { return storage_.data(); }
  const float* data() const { return storage_.data(); }
  int64_t size() const { return storage_.size(); }
  int rank() const { return static_cast<int>(shape_.size()); }
  const std::vector<int64_t>& shape() const { return shape_; }
  // REQUIRES: 0 <= i < rank().
  int64_t dim(int i) const { return shape_[static_cast<size_t>(i)]; }
  // REQUIRES: rank() == 2.
  int64_t rows() const { return shape_[0]; }
  int64_t cols() const { return shape_[1]; }
  Device device() const { return storage_.device(); }
  Memory memory() const { return storage_.memory(); }
  // REQUIRES: device() == Device::kCpu.
  std::span<float> span() { return storage_.span(); }
  std::span<const float> span() const { return storage_.span(); }
  float& operator[](int64_t i) { return storage_[i]; }
  const float& operator[](int64_t i) const { return storage_[i]; }

 private:
  Buffer<float> storage_;
  std::vector<int64_t> shape_;
};

// "[2, 3]": a shape for error messages.
std::string ShapeString(std::span<const int64_t> shape);

// A ragged batch of ids: row b holds ids[row_splits[b] .. row_splits[b+1]).
// row_splits has B + 1 entries, starts at 0, never decreases and ends at
// ids.size(). `weights` is empty (every weight 1) or holds one weight per id.
struct SparseIds {
  IdTensor ids;
  IdTensor row_splits;
  Tensor weights;

  int64_t batch_size() const {
    return row_splits.empty() ? 0 : row_splits.size() - 1;
  }
  bool has_weights() const { return weights.size() > 0; }
};

// OK when `ids` is well formed as described above (ids themselves are not
// range-checked here); InvalidArgument naming the first fault otherwise.
// For ids on a device, `host_splits` is a host copy of their row_splits.
Status CheckSparseIds(const SparseIds& ids,
                      const IdTensor* host_splits = nullptr);

// The gradient of an embedding table for the rows one batch touched: row u of
// `rows` ([U x D]) is the gradient of table row ids[u]. ids are unique and
// sorted ascending.
struct SparseGrad {
  IdTensor ids;
  Tensor rows;
};

}  // namespace dtf::kernels
