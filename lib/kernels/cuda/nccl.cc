// lib/kernels/collective.h on NCCL, loaded with dlopen the way cublas.cc
// loads cuBLAS: a dtf built with CUDA needs libnccl.so.2 only on the hosts
// that run an allreduce job. Communicators are non-blocking (NCCL 2.14 or
// later) and every call is waited for by collective_wait.h.
#include <dlfcn.h>
#include <nccl.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "lib/base/strings.h"
#include "lib/kernels/collective.h"
#include "lib/kernels/cuda/cuda_state.h"
#include "lib/kernels/transfer.h"

namespace dtf::kernels {
namespace {

struct NcclApi {
  decltype(&ncclGetUniqueId) get_unique_id;
  decltype(&ncclCommInitRankConfig) comm_init_rank_config;
  decltype(&ncclCommGetAsyncError) comm_get_async_error;
  decltype(&ncclCommAbort) comm_abort;
  decltype(&ncclCommFinalize) comm_finalize;
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
  } else if (!Resolve(library, "ncclCommInitRankConfig",
                      &api.comm_init_rank_config)) {
    missing = "ncclCommInitRankConfig";
  } else if (!Resolve(library, "ncclCommGetAsyncError",
                      &api.comm_get_async_error)) {
    missing = "ncclCommGetAsyncError";
  } else if (!Resolve(library, "ncclCommAbort", &api.comm_abort)) {
    missing = "ncclCommAbort";
  } else if (!Resolve(library, "ncclCommFinalize", &api.comm_finalize)) {
    missing = "ncclCommFinalize";
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
    return ResourceExhaustedError(StrCat("NCCL (", versioned,
                                         ") lacks the function ", missing,
                                         "; dtf needs NCCL 2.14 or later"));
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

struct Communicator::Impl final : CommProgress {
  const NcclApi* api = nullptr;
  const Context* ctx = nullptr;
  ncclComm_t comm = nullptr;  // null once aborted
  int rank = 0;
  int size = 0;
  CollectiveLimits limits;
  // The failure that aborted the communicator.
  std::string failure;
  Tensor host_scalar;    // AllReduceMin's value, pinned
  Tensor device_scalar;  // and on the device

  std::string RankName() const { return StrCat("rank ", rank, " of ", size); }

  Status AsyncState(bool* in_progress) override {
    ncclResult_t state = ncclSuccess;
    DTF_RETURN_IF_ERROR(NcclError(*api, comm,
                                  api->comm_get_async_error(comm, &state),
                                  "ncclCommGetAsyncError"));
    *in_progress = state == ncclInProgress;
    if (*in_progress) return OkStatus();
    return NcclError(*api, comm, state, "asynchronous error");
  }

  StatusOr<bool> StreamDone() override {
    const cudaError_t error = cudaStreamQuery(internal::StreamFor(*ctx));
    if (error == cudaErrorNotReady) return false;
    DTF_RETURN_IF_ERROR(
        internal::CudaError(error, "the stream of the NCCL communicator"));
    return true;
  }

  void Abort() override {
    if (comm == nullptr) return;
    internal::StreamFor(*ctx);
    api->comm_abort(comm);
    comm = nullptr;
  }

  // Fails at once once the communicator was aborted.
  Status Usable(std::string_view call) const {
    if (comm != nullptr) return OkStatus();
    return FailedPreconditionError(
        StrCat(call, " on ", RankName(),
               ": the NCCL communicator was aborted after an earlier "
               "failure: ",
               failure));
  }

  // Waits for what `result` (the return of a call on comm) started;
  // aborts the communicator on failure.
  Status Wait(ncclResult_t result, WaitUntil until, std::string_view call) {
    Status st;
    if (result != ncclSuccess && result != ncclInProgress) {
      st = NcclError(*api, comm, result, StrCat(call, " on ", RankName()));
      Abort();
      st = Status(st.code(),
                  StrCat(Message(st), "; the NCCL communicator was aborted"));
    } else {
      st = WaitForComm(*this, until, call, RankName(), limits);
    }
    if (!st.ok() && failure.empty()) failure = std::string(Message(st));
    return st;
  }
};

StatusOr<std::string> Communicator::NewId() {
  DTF_ASSIGN_OR_RETURN(const NcclApi* api, LoadNccl());
  ncclUniqueId id;
  DTF_RETURN_IF_ERROR(
      NcclError(*api, nullptr, api->get_unique_id(&id), "ncclGetUniqueId"));
  return std::string(id.internal, sizeof(id.internal));
}

StatusOr<std::unique_ptr<Communicator>> Communicator::Join(
    const Context& ctx, std::string_view id, int rank, int size,
    const CollectiveLimits& limits) {
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
  impl->limits = limits;
  ncclUniqueId unique;
  std::memcpy(unique.internal, id.data(), sizeof(unique.internal));
  internal::StreamFor(ctx);  // makes ctx's device current for NCCL
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  const ncclResult_t started =
      api->comm_init_rank_config(&impl->comm, size, unique, rank, &config);
  if (impl->comm == nullptr) {
    return NcclError(*api, nullptr,
                     started == ncclSuccess ? ncclInternalError : started,
                     StrCat("ncclCommInitRankConfig (", impl->RankName(), ")"));
  }
  DTF_RETURN_IF_ERROR(impl->Wait(started, WaitUntil::kCommunicatorReady,
                                 "ncclCommInitRankConfig"));
  impl->host_scalar.ResizeIn(Memory::kPinnedHost, {1});
  impl->device_scalar.ResizeIn(Memory::kDevice, {1});
  return std::unique_ptr<Communicator>(new Communicator(std::move(impl)));
}

Communicator::Communicator(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

Communicator::~Communicator() {
  Impl& impl = *impl_;
  if (impl.comm == nullptr) return;
  internal::StreamFor(*impl.ctx);
  // A teardown that a lost peer holds up is aborted sooner than a call.
  impl.limits.timeout = std::min<std::chrono::milliseconds>(
      impl.limits.timeout, std::chrono::seconds(10));
  const Status finalized =
      impl.Wait(impl.api->comm_finalize(impl.comm),
                WaitUntil::kCommunicatorReady, "ncclCommFinalize");
  if (finalized.ok()) impl.api->comm_destroy(impl.comm);
}

Status Communicator::AllReduceMean(Tensor* t) {
  if (t->device() != Device::kCuda) {
    return InvalidArgumentError("AllReduceMean: the tensor is not on the GPU");
  }
  if (t->size() == 0) return OkStatus();
  const std::string call =
      StrCat("ncclAllReduce (mean of ", t->size(), " floats)");
  DTF_RETURN_IF_ERROR(impl_->Usable(call));
  cudaStream_t stream = internal::StreamFor(*impl_->ctx);
  return impl_->Wait(
      impl_->api->all_reduce(t->data(), t->data(), size_t(t->size()),
                             ncclFloat32, ncclAvg, impl_->comm, stream),
      WaitUntil::kStreamDone, call);
}

Status Communicator::AllReduceMin(float* host_value) {
  const Context& ctx = *impl_->ctx;
  const std::string call = "ncclAllReduce (min of one float)";
  DTF_RETURN_IF_ERROR(impl_->Usable(call));
  impl_->host_scalar[0] = *host_value;
  DTF_RETURN_IF_ERROR(
      CopyToDevice(ctx, impl_->host_scalar, &impl_->device_scalar));
  cudaStream_t stream = internal::StreamFor(ctx);
  float* d = impl_->device_scalar.data();
  DTF_RETURN_IF_ERROR(
      impl_->Wait(impl_->api->all_reduce(d, d, 1, ncclFloat32, ncclMin,
                                         impl_->comm, stream),
                  WaitUntil::kStreamDone, call));
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
  const std::string call =
      StrCat("ncclBroadcast (", t->size(), " floats from rank ", root, ")");
  DTF_RETURN_IF_ERROR(impl_->Usable(call));
  cudaStream_t stream = internal::StreamFor(*impl_->ctx);
  return impl_->Wait(
      impl_->api->broadcast(t->data(), t->data(), size_t(t->size()),
                            ncclFloat32, root, impl_->comm, stream),
      WaitUntil::kStreamDone, call);
}

int Communicator::rank() const { return impl_->rank; }
int Communicator::size() const { return impl_->size; }

}  // namespace dtf::kernels
