#include "lib/runtime/train/tls_ring.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "lib/base/strings.h"
#include "lib/kernels/call_watch.h"
#include "lib/rpc/tls_stream.h"

namespace dtf::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// The largest piece of bytes AllGather takes from one rank.
constexpr uint64_t kMaxGatherBytes = uint64_t(1) << 30;

std::string WorkerName(int rank) { return StrCat("worker-", rank); }

class TlsRing final : public kernels::Collective {
 public:
  TlsRing(int rank, int size, kernels::CollectiveLimits limits,
          std::unique_ptr<rpc::TlsStream> next,
          std::unique_ptr<rpc::TlsStream> prev)
      : rank_(rank),
        size_(size),
        limits_(std::move(limits)),
        next_(std::move(next)),
        prev_(std::move(prev)) {
    if (limits_.cancel != nullptr) {
      watch_ = std::make_unique<kernels::CallWatch>(limits_.cancel,
                                                    limits_.cancel_grace);
    }
  }

  std::string_view backend() const override { return "TLS ring"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Status AllReduceMean(kernels::Tensor* t) override {
    DTF_RETURN_IF_ERROR(Begin("AllReduceMean"));
    const kernels::CallWatch::Scope watched = Watch();
    if (t->device() != kernels::Device::kCpu) {
      return InvalidArgumentError(
          "AllReduceMean: the TLS ring takes tensors "
          "in host memory only");
    }
    if (size_ == 1) return OkStatus();
    float* d = t->data();
    const int64_t n = t->size();
    const int64_t base = n / size_, rem = n % size_;
    auto off = [&](int i) { return i * base + std::min<int64_t>(i, rem); };
    auto len = [&](int i) { return base + (i < rem ? 1 : 0); };
    auto seg = [&](int i) { return ((i % size_) + size_) % size_; };
    std::vector<float> in(size_t(base + 1));
    for (int s = 0; s < size_ - 1; ++s) {
      const int out_i = seg(rank_ - s), in_i = seg(rank_ - s - 1);
      DTF_RETURN_IF_ERROR(Exchange("AllReduceMean", d + off(out_i),
                                   size_t(len(out_i)) * 4, in.data(),
                                   size_t(len(in_i)) * 4));
      float* acc = d + off(in_i);
      for (int64_t k = 0; k < len(in_i); ++k) acc[k] += in[size_t(k)];
    }
    for (int s = 0; s < size_ - 1; ++s) {
      const int out_i = seg(rank_ + 1 - s), in_i = seg(rank_ - s);
      DTF_RETURN_IF_ERROR(Exchange("AllReduceMean", d + off(out_i),
                                   size_t(len(out_i)) * 4, d + off(in_i),
                                   size_t(len(in_i)) * 4));
    }
    const float scale = 1.0f / float(size_);
    for (int64_t k = 0; k < n; ++k) d[k] *= scale;
    return OkStatus();
  }

  Status AllReduceMin(float* host_value) override {
    DTF_ASSIGN_OR_RETURN(
        std::vector<std::string> all,
        Gather("AllReduceMin",
               std::string_view(reinterpret_cast<const char*>(host_value),
                                sizeof(float))));
    for (const std::string& v : all) {
      float f;
      std::memcpy(&f, v.data(), sizeof(f));
      *host_value = std::min(*host_value, f);
    }
    return OkStatus();
  }

  Status Broadcast(kernels::Tensor* t, int root) override {
    DTF_RETURN_IF_ERROR(Begin("Broadcast"));
    const kernels::CallWatch::Scope watched = Watch();
    if (size_ == 1) return OkStatus();
    const size_t bytes = size_t(t->size()) * sizeof(float);
    if (rank_ != root) {
      if (Status st = prev_->ReadAll(t->data(), bytes); !st.ok()) {
        return Fail("Broadcast", st);
      }
    }
    if ((rank_ + 1) % size_ != root) {
      if (Status st = next_->WriteAll(t->data(), bytes); !st.ok()) {
        return Fail("Broadcast", st);
      }
    }
    return OkStatus();
  }

  StatusOr<std::vector<std::string>> AllGather(std::string_view mine) override {
    return Gather("AllGather", mine);
  }

  Status Barrier() override { return Gather("Barrier", "").status(); }

  void Abort() override {
    aborted_ = true;
    if (next_) next_->Shutdown();
    if (prev_) prev_->Shutdown();
  }

 private:
  std::string RankText() const { return StrCat("rank ", rank_, " of ", size_); }

  // OK when a call may begin: none failed before, not aborted, no cancel
  // older than the grace.
  Status Begin(std::string_view call) {
    if (failed_) {
      return FailedPreconditionError(
          StrCat(call, " on ", RankText(),
                 ": the collective failed earlier: ", Message(*failed_)));
    }
    if (aborted_) {
      return CancelledError(StrCat(call, " on ", RankText(), ": aborted"));
    }
    if (const auto left = watch_ ? watch_->GraceLeft() : std::nullopt;
        left && left->count() <= 0) {
      return CancelledError(
          StrCat(call, " on ", RankText(), ": the run is being stopped"));
    }
    return OkStatus();
  }

  // The call about to run, watched: given up once the run has been
  // stopping for the grace (a peer that hung, a cut network), both
  // connections end, which fails the reads and writes under way.
  kernels::CallWatch::Scope Watch() {
    return kernels::CallWatch::Scope(watch_.get(), [this] {
      next_->Shutdown();
      prev_->Shutdown();
    });
  }

  // Records the first failure and ends both connections, so that the
  // neighbours fail at once rather than at their timeout.
  Status Fail(std::string_view call, const Status& st) {
    if (watch_ != nullptr && watch_->gave_up()) {
      Status out = CancelledError(StrCat(call, " on ", RankText(),
                                         " (TLS ring): ", watch_->GaveUpWhy()));
      if (!failed_) failed_ = out;
      Abort();
      return out;
    }
    std::string why(Message(st));
    if (st.code() == absl::StatusCode::kDeadlineExceeded) {
      why = StrCat(why, " (", limits_.timeout.count() / 1000, " s, ",
                   limits_.timeout_name, ")");
    }
    Status out(st.code(),
               ToAbsl(StrCat(call, " on ", RankText(), " (TLS ring): ", why)));
    if (!failed_) failed_ = out;
    Abort();
    return out;
  }

  // Sends `out` to the next rank while receiving `in` from the previous.
  Status Exchange(std::string_view call, const void* out, size_t out_bytes,
                  void* in, size_t in_bytes) {
    Status sent;
    std::thread sender([&] { sent = next_->WriteAll(out, out_bytes); });
    Status got = prev_->ReadAll(in, in_bytes);
    if (!got.ok()) next_->Shutdown();
    sender.join();
    if (!got.ok()) return Fail(call, got);
    if (!sent.ok()) return Fail(call, sent);
    return OkStatus();
  }

  StatusOr<std::vector<std::string>> Gather(std::string_view call,
                                            std::string_view mine) {
    DTF_RETURN_IF_ERROR(Begin(call));
    const kernels::CallWatch::Scope watched = Watch();
    std::vector<std::string> all(size_t(size_), "");
    all[size_t(rank_)] = std::string(mine);
    for (int s = 0; s < size_ - 1; ++s) {
      const size_t out_i = size_t((rank_ - s + size_) % size_);
      const size_t in_i = size_t((rank_ - s - 1 + 2 * size_) % size_);
      const uint64_t out_len = all[out_i].size();
      uint64_t in_len = 0;
      DTF_RETURN_IF_ERROR(Exchange(call, &out_len, 8, &in_len, 8));
      if (in_len > kMaxGatherBytes) {
        return Fail(call, InvalidArgumentError(StrCat(
                              "worker-", in_i, " sent ", in_len,
                              " bytes (at most ", kMaxGatherBytes, ")")));
      }
      all[in_i].resize(size_t(in_len));
      DTF_RETURN_IF_ERROR(
          Exchange(call, all[out_i].data(), out_len, all[in_i].data(), in_len));
    }
    return all;
  }

  const int rank_, size_;
  const kernels::CollectiveLimits limits_;
  std::unique_ptr<rpc::TlsStream> next_, prev_;
  std::optional<Status> failed_;
  std::atomic<bool> aborted_{false};
  // Gives up a call under way when the run stops, and fails one that
  // begins past the grace (limits_.cancel set); declared last, so that its
  // thread ends first.
  std::unique_ptr<kernels::CallWatch> watch_;
};

}  // namespace

StatusOr<std::unique_ptr<kernels::Collective>> JoinTlsRing(
    kernels::KeyValueStore& store, std::string_view prefix,
    std::string_view host, int rank, int size, const rpc::TlsMaterial& tls,
    const kernels::CollectiveLimits& limits,
    std::chrono::milliseconds join_timeout) {
  if (size == 1) {
    return std::unique_ptr<kernels::Collective>(
        new TlsRing(0, 1, limits, nullptr, nullptr));
  }
  const auto deadline = Clock::now() + join_timeout;
  auto left = [&] {
    return std::max(std::chrono::milliseconds(1),
                    std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - Clock::now()));
  };
  DTF_ASSIGN_OR_RETURN(
      std::unique_ptr<rpc::TlsListener> listener,
      rpc::TlsListener::Listen(std::string(host), tls, limits.timeout));
  const std::string bare(host);
  const bool v6 = bare.find(':') != std::string::npos && bare.front() != '[';
  DTF_RETURN_IF_ERROR(store.Set(
      StrCat(prefix, rank),
      StrCat(v6 ? "[" : "", bare, v6 ? "]" : "", ":", listener->port())));
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  // Each rank connects to its next while it accepts its previous: every
  // handshake needs both ends at once.
  StatusOr<std::unique_ptr<rpc::TlsStream>> out =
      UnavailableError("not connected");
  std::thread connector([&] {
    StatusOr<std::string> next_address =
        store.Get(StrCat(prefix, next), left());
    if (!next_address.ok()) {
      out = next_address.status();
      return;
    }
    out = rpc::TlsConnect(*next_address, tls, WorkerName(next), left(),
                          limits.timeout);
  });
  StatusOr<std::unique_ptr<rpc::TlsStream>> in =
      listener->Accept(WorkerName(prev), left(), limits.cancel);
  connector.join();
  const std::string where = StrCat("rank ", rank, " of ", size, " (TLS ring)");
  if (!out.ok()) {
    return Status(out.status().code(),
                  ToAbsl(StrCat(where, ": ", Message(out.status()))));
  }
  if (!in.ok()) {
    return Status(in.status().code(),
                  ToAbsl(StrCat(where, ": ", Message(in.status()))));
  }
  return std::unique_ptr<kernels::Collective>(
      new TlsRing(rank, size, limits, *std::move(out), *std::move(in)));
}

}  // namespace dtf::runtime
