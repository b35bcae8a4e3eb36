// cuBLAS, loaded when the first CUDA context is made (dlopen) rather than
// linked: a dtf built with CUDA starts, packs and runs CPU tasks on hosts
// that have no CUDA libraries at all.
#pragma once

#include <cublas_api.h>

#include "lib/base/status.h"

namespace dtf::kernels::internal {

struct CublasApi {
  decltype(&cublasCreate_v2) create;
  decltype(&cublasDestroy_v2) destroy;
  decltype(&cublasSetStream_v2) set_stream;
  decltype(&cublasSgemm_v2) sgemm;
  decltype(&cublasGetStatusString) status_string;
};

// The loaded library (loaded once per process; later calls return the same
// table or the same error). ResourceExhausted naming the library when it cannot
// be found or lacks a function.
StatusOr<const CublasApi*> LoadCublas();

// OK for CUBLAS_STATUS_SUCCESS; otherwise Internal naming `what`.
Status CublasError(const CublasApi& api, cublasStatus_t status,
                   std::string_view what);

}  // namespace dtf::kernels::internal
