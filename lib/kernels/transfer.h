// Copies between host and device at batch boundaries, queued on the
// context's stream. On a CPU context every function is a plain copy, so code
// written once runs on either device.
//
// From pinned host memory (Memory::kPinnedHost) a copy to the device is
// asynchronous: the host tensor must not change until the stream has passed
// the copy (Context::Synchronize, or the next CopyToHost). From pageable
// memory it returns once the data has left the host tensor.
#pragma once

#include "lib/base/status.h"
#include "lib/kernels/context.h"
#include "lib/kernels/tensor.h"

namespace dtf::kernels {

// dst gets src's shape and values on ctx's device (kept where it is when it
// is already there).
Status CopyToDevice(const Context& ctx, const Tensor& src, Tensor* dst);
Status CopyToDevice(const Context& ctx, const IdTensor& src, IdTensor* dst);
// Ids, row splits and weights.
Status CopyToDevice(const Context& ctx, const SparseIds& src, SparseIds* dst);

// dst gets src's shape and values in host memory (pinned when dst was
// pinned). Waits for the stream, so dst is ready on return and the first
// asynchronous error of anything queued before is returned.
Status CopyToHost(const Context& ctx, const Tensor& src, Tensor* dst);
Status CopyToHost(const Context& ctx, const IdTensor& src, IdTensor* dst);

}  // namespace dtf::kernels
