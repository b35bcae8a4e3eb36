// How a kernel hands a call on a CUDA context to its CUDA implementation
// (lib/kernels/cuda/): after the shared checks, and after the outputs were
// placed and sized on the context's memory,
//   DTF_CUDA_DISPATCH(ctx, cuda::Relu(ctx, x, y));
// returns the CUDA implementation's status on a CUDA context and does
// nothing otherwise. A build without CUDA compiles it away (no Context::Cuda
// exists there).
#pragma once

#include "lib/kernels/context.h"

#if DTF_HAVE_CUDA
#define DTF_CUDA_DISPATCH(ctx, call)                       \
  do {                                                     \
    if ((ctx).device() == ::dtf::kernels::Device::kCuda) { \
      return (call);                                       \
    }                                                      \
  } while (0)
#else
#define DTF_CUDA_DISPATCH(ctx, call) \
  do {                               \
    (void)(ctx);                     \
  } while (0)
#endif
