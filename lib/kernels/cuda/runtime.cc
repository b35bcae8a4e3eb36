// lib/kernels/internal/cuda_memory.h on the CUDA runtime: memory, copies,
// contexts' state and the device list.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "lib/base/strings.h"
#include "lib/kernels/cuda/cublas.h"
#include "lib/kernels/cuda/cuda_state.h"

namespace dtf::kernels::internal {
namespace {

[[noreturn]] void Abort(std::string_view what, cudaError_t error) {
  std::fprintf(stderr, "dtf: %.*s: %s\n", int(what.size()), what.data(),
               cudaGetErrorString(error));
  std::abort();
}

std::string VisibleDevices() {
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
  return v == nullptr ? std::string("unset") : StrCat("\"", v, "\"");
}

}  // namespace

Status CudaError(cudaError_t error, std::string_view what) {
  if (error == cudaSuccess) return OkStatus();
  const std::string message = StrCat(what, ": ", cudaGetErrorName(error), " (",
                                     cudaGetErrorString(error), ")");
  switch (error) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice:
    case cudaErrorDevicesUnavailable:
      return ResourceExhaustedError(
          StrCat(message, "; CUDA_VISIBLE_DEVICES is ", VisibleDevices()));
    case cudaErrorMemoryAllocation:
      return ResourceExhaustedError(message);
    default:
      return InternalError(message);
  }
}

Status LaunchError(std::string_view what) {
  return CudaError(cudaGetLastError(), what);
}

cudaStream_t StreamFor(const Context& ctx) {
  CudaState& state = CudaStateOf(ctx);
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess || current != state.ordinal) {
    cudaSetDevice(state.ordinal);
  }
  return state.stream;
}

CudaState::~CudaState() {
  cudaSetDevice(ordinal);
  if (stream != nullptr) cudaStreamSynchronize(stream);
  if (cublas != nullptr) {
    cublas_api->destroy(static_cast<cublasHandle_t>(cublas));
  }
  if (device_scratch_ != nullptr) cudaFree(device_scratch_);
  if (host_scratch_ != nullptr) cudaFreeHost(host_scratch_);
  if (stream != nullptr) cudaStreamDestroy(stream);
}

void* CudaState::DeviceScratch(size_t bytes) {
  if (bytes > device_scratch_bytes_) {
    if (device_scratch_ != nullptr) cudaFree(device_scratch_);  // waits
    device_scratch_ = CudaAllocate(Memory::kDevice, bytes);
    device_scratch_bytes_ = bytes;
  }
  return device_scratch_;
}

void* CudaState::HostScratch(size_t bytes) {
  if (bytes > host_scratch_bytes_) {
    if (host_scratch_ != nullptr) {
      cudaStreamSynchronize(stream);
      cudaFreeHost(host_scratch_);
    }
    host_scratch_ = CudaAllocate(Memory::kPinnedHost, bytes);
    host_scratch_bytes_ = bytes;
  }
  return host_scratch_;
}

void* CudaAllocate(Memory memory, size_t bytes) {
  void* p = nullptr;
  const cudaError_t error =
      memory == Memory::kDevice
          ? cudaMalloc(&p, bytes)
          : cudaHostAlloc(&p, bytes, cudaHostAllocDefault);
  if (error != cudaSuccess) {
    Abort(StrCat(memory == Memory::kDevice ? "cudaMalloc" : "cudaHostAlloc",
                 " of ", bytes, " bytes"),
          error);
  }
  return p;
}

void CudaFree(Memory memory, void* p) {
  if (memory == Memory::kDevice) {
    cudaFree(p);
  } else {
    cudaFreeHost(p);
  }
}

void CudaCopy(void* dst, const void* src, size_t bytes) {
  const cudaError_t error = cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);
  if (error != cudaSuccess)
    Abort(StrCat("cudaMemcpy of ", bytes, " bytes"), error);
}

StatusOr<std::shared_ptr<CudaState>> CreateCudaState(int ordinal) {
  int count = 0;
  DTF_RETURN_IF_ERROR(CudaError(cudaGetDeviceCount(&count), "CUDA devices"));
  if (ordinal >= count) {
    return ResourceExhaustedError(
        StrCat("CUDA device ", ordinal, " does not exist: this process sees ",
               count, " (CUDA_VISIBLE_DEVICES is ", VisibleDevices(), ")"));
  }
  DTF_ASSIGN_OR_RETURN(const CublasApi* cublas, LoadCublas());
  auto state = std::make_shared<CudaState>();
  state->ordinal = ordinal;
  state->cublas_api = cublas;
  DTF_RETURN_IF_ERROR(
      CudaError(cudaSetDevice(ordinal), StrCat("CUDA device ", ordinal)));
  DTF_RETURN_IF_ERROR(CudaError(
      cudaStreamCreateWithFlags(&state->stream, cudaStreamNonBlocking),
      StrCat("a stream on CUDA device ", ordinal)));
  cublasHandle_t handle = nullptr;
  DTF_RETURN_IF_ERROR(
      CublasError(*cublas, cublas->create(&handle), "cublasCreate"));
  state->cublas = handle;
  DTF_RETURN_IF_ERROR(CublasError(
      *cublas, cublas->set_stream(handle, state->stream), "cublasSetStream"));
  return state;
}

int CudaOrdinal(const CudaState& state) { return state.ordinal; }

Status CudaCopyAsync(const Context& ctx, void* dst, const void* src,
                     size_t bytes) {
  if (bytes == 0) return OkStatus();
  return CudaError(
      cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, StreamFor(ctx)),
      StrCat("copy of ", bytes, " bytes"));
}

Status CudaSynchronize(const Context& ctx) {
  return CudaError(cudaStreamSynchronize(StreamFor(ctx)),
                   "a CUDA kernel or copy on this context");
}

StatusOr<std::vector<CudaDeviceInfo>> ListCudaDevices() {
  int count = 0;
  DTF_RETURN_IF_ERROR(CudaError(cudaGetDeviceCount(&count), "CUDA devices"));
  std::vector<CudaDeviceInfo> devices;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    DTF_RETURN_IF_ERROR(CudaError(cudaGetDeviceProperties(&prop, i),
                                  StrCat("CUDA device ", i)));
    CudaDeviceInfo info;
    info.ordinal = i;
    info.name = prop.name;
    info.memory_bytes = int64_t(prop.totalGlobalMem);
    info.compute_major = prop.major;
    info.compute_minor = prop.minor;
    devices.push_back(std::move(info));
  }
  return devices;
}

}  // namespace dtf::kernels::internal
