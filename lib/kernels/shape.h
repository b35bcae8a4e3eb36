// Element counts and byte sizes of shapes, checked for overflow.
#pragma once

#include <cstdint>
#include <span>

#include "lib/base/status.h"

namespace dtf::kernels {

// The number of elements of `shape`: InvalidArgument naming the shape for a
// negative dimension or a count past int64.
StatusOr<int64_t> CheckedNumElements(std::span<const int64_t> shape);
// The size in bytes of `shape` at `element_bytes` (> 0) each: as
// CheckedNumElements, and InvalidArgument for a size past int64.
StatusOr<int64_t> CheckedByteSize(std::span<const int64_t> shape,
                                  int64_t element_bytes);

}  // namespace dtf::kernels
