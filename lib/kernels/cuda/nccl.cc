// lib/kernels/collective.h on NCCL, loaded with dlopen the way cublas.cc
// loads cuBLAS: a dtf built with CUDA needs libnccl.so.2 only on the hosts
// that run an allreduce job.
#include <dlfcn.h>
#include <nccl.h>

#include <cstring>
#include <string>

#include "lib/base/strings.h"
#include "lib/kernels/collective.h"
#include "lib/kernels/cuda/cuda_state.h"
#include "lib/kernels/transfer.h"

namespace dtf::kernels {
namespace {

struct NcclApi {
  decltype(&ncclGetUniqueId) get_unique_id;
  decltype(&ncclCommInitRank) comm_init_rank;
  decltype(&ncclCommDestroy) comm_destroy;
  decltype(&ncclAllReduce) all_reduce;
  decltype(&ncclBroadcast) broadcast;
  decltype(&ncclGetErrorString) error_string;
  // NCCL's last error message of a communicator; absent before NCCL 2.13.
  decltype(&ncclGetLastError) last_error;
};

template <typename F>
bool Resolve(void* library, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(library, name));
  return *out != nullptr;
}

StatusOr<const NcclApi*> Load() {
  // The major version this build was compiled against, then any.
  const std::string versioned = StrCat("libnccl.so.", NCCL_MAJOR);
  void* library = dlopen(versioned.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) library = dlopen("libnccl.so", RTLD_NOW);
  if (library == nullptr) {
    const char* why = dlerror();
    return ResourceExhaustedError(
        StrCat("NCCL could not be loaded (", versioned,
               "): ", why != nullptr ? why : "not found",
               "; install NCCL (libnccl2) or add its directory to "
               "LD_LIBRARY_PATH"));
  }
  static NcclApi api;
  const char* missing = nullptr;
  if (!Resolve(library, "ncclGetUniqueId", &api.get_unique_id)) {
    missing = "ncclGetUniqueId";
  } else if (!Resolve(library, "ncclCommInitRank", &api.comm_init_rank)) {
    missing = "ncclCommInitRank";
  } else if (!Resolve(library, "ncclCommDestroy", &api.comm_destroy)) {
    missing = "ncclCommDestroy";
  } else if (!Resolve(library, "ncclAllReduce", &api.all_reduce)) {
    missing = "ncclAllReduce";
  } else if (!Resolve(library, "ncclBroadcast", &api.broadcast)) {
    missing = "ncclBroadcast";
  } else if (!Resolve(library, "ncclGetErrorString", &api.error_string)) {
    missing = "ncclGetErrorString";
  }
  if (missing != nullptr) {
    return ResourceExhaustedError(
        StrCat("NCCL (", versioned, ") lacks the function ", missing));
  }
  Resolve(library, "ncclGetLastError", &api.last_error);
  return &api;
}

StatusOr<const NcclApi*> LoadNccl() {
  static const StatusOr<const NcclApi*> loaded = Load();
  return loaded;
}

// OK for ncclSuccess; otherwise Unavailable for a failed peer or network
// (ncclSystemError, ncclRemoteError), Internal for anything else, naming
// `what`, NCCL's description and its last message when it has one.
Status NcclError(const NcclApi& api, ncclComm_t comm, ncclResult_t result,
                 std::string_view what) {
  if (result == ncclSuccess) return OkStatus();
  const char* text = api.error_string(result);
  std::string message = StrCat(what, ": NCCL error ", int(result), " (",
                               text != nullptr ? text : "unknown", ")");
  if (api.last_error != nullptr) {
    const char* last = api.last_error(comm);
    if (last != nullptr && last[0] != '\0')
      message = StrCat(message, ": ", last);
  }
  if (result == ncclSystemError || result == ncclRemoteError) {
    return UnavailableError(message);
  }
  return InternalError(message);
}

}  // namespace

struct Communicator::Impl {
  const NcclApi* api = nullptr;
  const Context* ctx = nullptr;
  ncclComm_t comm = nullptr;
  int rank = 0;
  int size = 0;
  Tensor host_scalar;    // AllReduceMin's value, pinned
  Tensor device_scalar;  // and on the device
};

StatusOr<std::string> Communicator::NewId() {
  DTF_ASSIGN_OR_RETURN(const NcclApi* api, LoadNccl());
  ncclUniqueId id;
  DTF_RETURN_IF_ERROR(
      NcclError(*api, nullptr, api->get_unique_id(&id), "ncclGetUniqueId"));
  return std::string(id.internal, sizeof(id.internal));
}

StatusOr<std::unique_ptr<Communicator>> Communicator::Join(const Context& ctx,
                                                           std::string_view id,
                                                           int rank, int size) {
  if (ctx.device() != Device::kCuda) {
    return InvalidArgumentError(
        "Communicator::Join: NCCL needs a CUDA context, not the CPU");
  }
  if (id.size() != NCCL_UNIQUE_ID_BYTES) {
    return InvalidArgumentError(StrCat("Communicator::Join: the unique id has ",
                                       id.size(), " bytes; NCCL's has ",
                                       NCCL_UNIQUE_ID_BYTES));
  }
  if (size < 1 || rank < 0 || rank >= size) {
    return InvalidArgumentError(StrCat("Communicator::Join: rank ", rank,
                                       " of ", size, " is out of range"));
  }
  DTF_ASSIGN_OR_RETURN(const NcclApi* api, LoadNccl());
  auto impl = std::make_unique<Impl>();
  impl->api = api;
  impl->ctx = &ctx;
  impl->rank = rank;
  impl->size = size;
  ncclUniqueId unique;
  std::memcpy(unique.internal, id.data(), sizeof(unique.internal));
  internal::StreamFor(ctx);  // makes ctx's device current for NCCL
  DTF_RETURN_IF_ERROR(NcclError(
      *api, nullptr, api->comm_init_rank(&impl->comm, size, unique, rank),
      StrCat("ncclCommInitRank (rank ", rank, " of ", size, ")")));
  impl->host_scalar.ResizeIn(Memory::kPinnedHost, {1});
  impl->device_scalar.ResizeIn(Memory::kDevice, {1});
  return std::unique_ptr<Communicator>(new Communicator(std::move(impl)));
}

Communicator::Communicator(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

Communicator::~Communicator() {
  if (impl_->comm == nullptr) return;
  // Let queued collectives finish before the communicator goes.
  internal::CudaSynchronize(*impl_->ctx).IgnoreError();
  impl_->api->comm_destroy(impl_->comm);
}

Status Communicator::AllReduceMean(Tensor* t) {
  if (t->device() != Device::kCuda) {
    return InvalidArgumentError("AllReduceMean: the tensor is not on the GPU");
  }
  if (t->size() == 0) return OkStatus();
  cudaStream_t stream = internal::StreamFor(*impl_->ctx);
  return NcclError(
      *impl_->api, impl_->comm,
      impl_->api->all_reduce(t->data(), t->data(), size_t(t->size()),
                             ncclFloat32, ncclAvg, impl_->comm, stream),
      StrCat("ncclAllReduce (mean of ", t->size(), " floats)"));
}

Status Communicator::AllReduceMin(float* host_value) {
  const Context& ctx = *impl_->ctx;
  impl_->host_scalar[0] = *host_value;
  DTF_RETURN_IF_ERROR(
      CopyToDevice(ctx, impl_->host_scalar, &impl_->device_scalar));
  cudaStream_t stream = internal::StreamFor(ctx);
  float* d = impl_->device_scalar.data();
  DTF_RETURN_IF_ERROR(
      NcclError(*impl_->api, impl_->comm,
                impl_->api->all_reduce(d, d, 1, ncclFloat32, ncclMin,
                                       impl_->comm, stream),
                "ncclAllReduce (min of one float)"));
  DTF_RETURN_IF_ERROR(
      CopyToHost(ctx, impl_->device_scalar, &impl_->host_scalar));
  *host_value = impl_->host_scalar[0];
  return OkStatus();
}

Status Communicator::Broadcast(Tensor* t, int root) {
  if (t->device() != Device::kCuda) {
    return InvalidArgumentError("Broadcast: the tensor is not on the GPU");
  }
  if (root < 0 || root >= impl_->size) {
    return InvalidArgumentError(StrCat("Broadcast: root ", root, " of ",
                                       impl_->size, " ranks is out of range"));
  }
  if (t->size() == 0) return OkStatus();
  cudaStream_t stream = internal::StreamFor(*impl_->ctx);
  return NcclError(
      *impl_->api, impl_->comm,
      impl_->api->broadcast(t->data(), t->data(), size_t(t->size()),
                            ncclFloat32, root, impl_->comm, stream),
      StrCat("ncclBroadcast (", t->size(), " floats from rank ", root, ")"));
}

int Communicator::rank() const { return impl_->rank; }
int Communicator::size() const { return impl_->size; }

}  // namespace dtf::kernels
