// lib/kernels/nccl.h: the collective on NCCL, loaded with dlopen the way
// cublas.cc loads cuBLAS: a dtf built with CUDA needs libnccl.so.2 only on the
// hosts that run an allreduce job. Communicators are non-blocking (NCCL 2.14 or
// later) and every call is waited for by collective_wait.h.
#include "lib/kernels/nccl.h"

#include <dlfcn.h>
#include <nccl.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/strings.h"
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
  decltype(&ncclAllGather) all_gather;
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
  } else if (!Resolve(library, "ncclAllGather", &api.all_gather)) {
    missing = "ncclAllGather";
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

struct NcclState final : CommProgress {
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

class NcclCollective final : public Collective {
 public:
  explicit NcclCollective(std::unique_ptr<NcclState> state)
      : s_(std::move(state)) {}

  // Tears the communicator down (ncclCommFinalize, then ncclCommDestroy),
  // aborting it where that does not end within 10 s.
  ~NcclCollective() override {
    NcclState& s = *s_;
    if (s.comm == nullptr) return;
    internal::StreamFor(*s.ctx);
    // A teardown that a lost peer holds up is aborted sooner than a call.
    s.limits.timeout = std::min<std::chrono::milliseconds>(
        s.limits.timeout, std::chrono::seconds(10));
    const Status finalized =
        s.Wait(s.api->comm_finalize(s.comm), WaitUntil::kCommunicatorReady,
               "ncclCommFinalize");
    if (finalized.ok()) s.api->comm_destroy(s.comm);
  }

  std::string_view backend() const override { return "NCCL"; }
  int rank() const override { return s_->rank; }
  int size() const override { return s_->size; }

  Status AllReduceMean(Tensor* t) override {
    if (t->device() != Device::kCuda) {
      return InvalidArgumentError(
          "AllReduceMean: the tensor is not on the GPU");
    }
    if (t->size() == 0) return OkStatus();
    const std::string call =
        StrCat("ncclAllReduce (mean of ", t->size(), " floats)");
    DTF_RETURN_IF_ERROR(s_->Usable(call));
    cudaStream_t stream = internal::StreamFor(*s_->ctx);
    return s_->Wait(s_->api->all_reduce(t->data(), t->data(), size_t(t->size()),
                                        ncclFloat32, ncclAvg, s_->comm, stream),
                    WaitUntil::kStreamDone, call);
  }

  Status AllReduceMin(float* host_value) override {
    const Context& ctx = *s_->ctx;
    const std::string call = "ncclAllReduce (min of one float)";
    DTF_RETURN_IF_ERROR(s_->Usable(call));
    s_->host_scalar[0] = *host_value;
    DTF_RETURN_IF_ERROR(CopyToDevice(ctx, s_->host_scalar, &s_->device_scalar));
    cudaStream_t stream = internal::StreamFor(ctx);
    float* d = s_->device_scalar.data();
    DTF_RETURN_IF_ERROR(s_->Wait(
        s_->api->all_reduce(d, d, 1, ncclFloat32, ncclMin, s_->comm, stream),
        WaitUntil::kStreamDone, call));
    DTF_RETURN_IF_ERROR(CopyToHost(ctx, s_->device_scalar, &s_->host_scalar));
    *host_value = s_->host_scalar[0];
    return OkStatus();
  }

  Status Broadcast(Tensor* t, int root) override {
    if (t->device() != Device::kCuda) {
      return InvalidArgumentError("Broadcast: the tensor is not on the GPU");
    }
    if (root < 0 || root >= s_->size) {
      return InvalidArgumentError(StrCat("Broadcast: root ", root, " of ",
                                         s_->size, " ranks is out of range"));
    }
    if (t->size() == 0) return OkStatus();
    const std::string call =
        StrCat("ncclBroadcast (", t->size(), " floats from rank ", root, ")");
    DTF_RETURN_IF_ERROR(s_->Usable(call));
    cudaStream_t stream = internal::StreamFor(*s_->ctx);
    return s_->Wait(s_->api->broadcast(t->data(), t->data(), size_t(t->size()),
                                       ncclFloat32, root, s_->comm, stream),
                    WaitUntil::kStreamDone, call);
  }

  // Two ncclAllGather calls: every rank's length (8 bytes), then every
  // rank's bytes padded to the longest.
  StatusOr<std::vector<std::string>> AllGather(std::string_view mine) override {
    const Context& ctx = *s_->ctx;
    const int n = s_->size;
    const std::string call =
        StrCat("ncclAllGather (", mine.size(), " bytes a rank)");
    DTF_RETURN_IF_ERROR(s_->Usable(call));
    // Bytes travel in float tensors: 2 floats hold a length.
    Tensor length = Tensor::Empty({2});
    const int64_t own = int64_t(mine.size());
    std::memcpy(length.data(), &own, sizeof(own));
    Tensor d_length = length.CloneIn(Memory::kDevice);
    Tensor d_lengths = Tensor::Empty({2 * int64_t(n)}, Memory::kDevice);
    cudaStream_t stream = internal::StreamFor(ctx);
    DTF_RETURN_IF_ERROR(
        s_->Wait(s_->api->all_gather(d_length.data(), d_lengths.data(),
                                     sizeof(own), ncclUint8, s_->comm, stream),
                 WaitUntil::kStreamDone, call));
    const Tensor lengths = d_lengths.CloneIn(Memory::kHost);
    std::vector<int64_t> sizes(size_t(n), 0);
    int64_t longest = 0;
    for (int r = 0; r < n; ++r) {
      std::memcpy(&sizes[size_t(r)], lengths.data() + 2 * r, sizeof(int64_t));
      longest = std::max(longest, sizes[size_t(r)]);
    }
    const int64_t floats = (longest + 3) / 4;
    std::vector<std::string> out(static_cast<size_t>(n));
    if (floats == 0) return out;
    Tensor send = Tensor::Zeros({floats});
    std::memcpy(send.data(), mine.data(), mine.size());
    Tensor d_send = send.CloneIn(Memory::kDevice);
    Tensor d_all = Tensor::Empty({floats * n}, Memory::kDevice);
    DTF_RETURN_IF_ERROR(
        s_->Wait(s_->api->all_gather(d_send.data(), d_all.data(),
                                     size_t(floats) * sizeof(float), ncclUint8,
                                     s_->comm, stream),
                 WaitUntil::kStreamDone, call));
    const Tensor all = d_all.CloneIn(Memory::kHost);
    for (int r = 0; r < n; ++r) {
      const char* at = reinterpret_cast<const char*>(all.data() + floats * r);
      out[size_t(r)].assign(at, size_t(sizes[size_t(r)]));
    }
    return out;
  }

  // An allreduce of one float: it ends on no rank before every rank began
  // it.
  Status Barrier() override {
    float unused = 0;
    return AllReduceMin(&unused);
  }

  void Abort() override {
    if (s_->comm == nullptr) return;
    s_->Abort();
    if (s_->failure.empty()) s_->failure = "aborted";
  }

 private:
  std::unique_ptr<NcclState> s_;
};

}  // namespace

StatusOr<std::string> NewNcclId() {
  DTF_ASSIGN_OR_RETURN(const NcclApi* api, LoadNccl());
  ncclUniqueId id;
  DTF_RETURN_IF_ERROR(
      NcclError(*api, nullptr, api->get_unique_id(&id), "ncclGetUniqueId"));
  return std::string(id.internal, sizeof(id.internal));
}

StatusOr<std::unique_ptr<Collective>> JoinNccl(const Context& ctx,
                                               std::string_view id, int rank,
                                               int size,
                                               const CollectiveLimits& limits) {
  if (ctx.device() != Device::kCuda) {
    return InvalidArgumentError(
        "JoinNccl: NCCL needs a CUDA context, not the CPU");
  }
  if (id.size() != NCCL_UNIQUE_ID_BYTES) {
    return InvalidArgumentError(StrCat("JoinNccl: the unique id has ",
                                       id.size(), " bytes; NCCL's has ",
                                       NCCL_UNIQUE_ID_BYTES));
  }
  if (size < 1 || rank < 0 || rank >= size) {
    return InvalidArgumentError(
        StrCat("JoinNccl: rank ", rank, " of ", size, " is out of range"));
  }
  DTF_ASSIGN_OR_RETURN(const NcclApi* api, LoadNccl());
  auto state = std::make_unique<NcclState>();
  state->api = api;
  state->ctx = &ctx;
  state->rank = rank;
  state->size = size;
  state->limits = limits;
  ncclUniqueId unique;
  std::memcpy(unique.internal, id.data(), sizeof(unique.internal));
  internal::StreamFor(ctx);  // makes ctx's device current for NCCL
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  const ncclResult_t started =
      api->comm_init_rank_config(&state->comm, size, unique, rank, &config);
  if (state->comm == nullptr) {
    return NcclError(
        *api, nullptr, started == ncclSuccess ? ncclInternalError : started,
        StrCat("ncclCommInitRankConfig (", state->RankName(), ")"));
  }
  DTF_RETURN_IF_ERROR(state->Wait(started, WaitUntil::kCommunicatorReady,
                                  "ncclCommInitRankConfig"));
  state->host_scalar.ResizeIn(Memory::kPinnedHost, {1});
  state->device_scalar.ResizeIn(Memory::kDevice, {1});
  return std::unique_ptr<Collective>(new NcclCollective(std::move(state)));
}

}  // namespace dtf::kernels
