// Buffers of kBytes for the slices of wire messages, kept for reuse once
// gRPC (or the Session over TLS) lets go of a slice: a fresh buffer per
// message of a bulk step costs its page faults, and the kernel's zeroing
// of them, on every step. At most kMaxFree are kept. Never destroyed:
// slices may outlive every other object. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "grpcpp/support/slice.h"

namespace dtf::runtime {

template <size_t kBytes, size_t kMaxFree>
class BufferPool {
 public:
  static constexpr size_t kBufferBytes = kBytes;

  // A slice of `bytes` (at most kBytes) whose buffer goes back to the pool
  // when the slice is released; *data receives the buffer, whose contents
  // are undefined.
  static grpc::Slice NewSlice(size_t bytes, char** data) {
    *data = static_cast<char*>(Get().Take());
    return grpc::Slice(*data, bytes, &Give);
  }

 private:
  static BufferPool& Get() {
    static BufferPool* const pool = new BufferPool;
    return *pool;
  }
  static void Give(void* p) { Get().Put(p); }

  void* Take() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!free_.empty()) {
        void* p = free_.back();
        free_.pop_back();
        return p;
      }
    }
    return std::malloc(kBytes);
  }
  void Put(void* p) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (free_.size() < kMaxFree) {
        free_.push_back(p);
        return;
      }
    }
    std::free(p);
  }

  std::mutex mu_;
  std::vector<void*> free_;
};

}  // namespace dtf::runtime
