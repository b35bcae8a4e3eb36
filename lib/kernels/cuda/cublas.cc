#include "lib/kernels/cuda/cublas.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

#include "lib/base/strings.h"

namespace dtf::kernels::internal {
namespace {

template <typename F>
bool Resolve(void* library, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(library, name));
  return *out != nullptr;
}

StatusOr<const CublasApi*> Load() {
  // The major version this build was compiled against, then any.
  const std::string versioned = StrCat("libcublas.so.", CUBLAS_VER_MAJOR);
  void* library = dlopen(versioned.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) library = dlopen("libcublas.so", RTLD_NOW);
  if (library == nullptr) {
    const char* why = dlerror();
    return ResourceExhaustedError(
        StrCat("cuBLAS could not be loaded (", versioned,
               "): ", why != nullptr ? why : "not found",
               "; install the CUDA toolkit's libraries or add their "
               "directory to LD_LIBRARY_PATH"));
  }
  static CublasApi api;
  const char* missing = nullptr;
  if (!Resolve(library, "cublasCreate_v2", &api.create)) {
    missing = "cublasCreate_v2";
  } else if (!Resolve(library, "cublasDestroy_v2", &api.destroy)) {
    missing = "cublasDestroy_v2";
  } else if (!Resolve(library, "cublasSetStream_v2", &api.set_stream)) {
    missing = "cublasSetStream_v2";
  } else if (!Resolve(library, "cublasSgemm_v2", &api.sgemm)) {
    missing = "cublasSgemm_v2";
  } else if (!Resolve(library, "cublasGetStatusString", &api.status_string)) {
    missing = "cublasGetStatusString";
  }
  if (missing != nullptr) {
    return ResourceExhaustedError(
        StrCat("cuBLAS (", versioned, ") lacks the function ", missing));
  }
  return &api;
}

}  // namespace

StatusOr<const CublasApi*> LoadCublas() {
  static const StatusOr<const CublasApi*> loaded = Load();
  return loaded;
}

Status CublasError(const CublasApi& api, cublasStatus_t status,
                   std::string_view what) {
  if (status == CUBLAS_STATUS_SUCCESS) return OkStatus();
  const char* text = api.status_string(status);
  return InternalError(StrCat(what, ": cuBLAS error ", int(status), " (",
                              text != nullptr ? text : "unknown", ")"));
}

}  // namespace dtf::kernels::internal
