// lib/kernels/gloo.h: the collective on Gloo's TCP transport.
#include <arpa/inet.h>
#include <gloo/allgather.h>
#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/common/logging.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/address.h>
#include <gloo/transport/tcp/device.h>
#include <netdb.h>
#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "lib/base/strings.h"
#include "lib/kernels/call_watch.h"
#include "lib/kernels/gloo.h"
#include "lib/kernels/gloo_calls.h"

namespace dtf::kernels {

Status MemoryStore::Set(const std::string& key, std::string_view value) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    values_[key] = std::string(value);
  }
  set_.notify_all();
  return OkStatus();
}

StatusOr<std::string> MemoryStore::Get(const std::string& key,
                                       std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!set_.wait_for(lock, timeout, [&] { return values_.contains(key); })) {
    return DeadlineExceededError(StrCat("no rank set the key \"", key,
                                        "\" within ", timeout.count(), " ms"));
  }
  return values_[key];
}

namespace {

using gloo_calls::AllgatherCall;
using gloo_calls::AllgathervCall;
using gloo_calls::AllreduceCall;
using gloo_calls::BarrierCall;
using gloo_calls::BroadcastCall;
using gloo_calls::FailEveryPair;

// gloo's store on a KeyValueStore. gloo reports a store's failure by an
// exception; the first failure's Status is kept for the boundary.
class GlooStoreAdapter final : public gloo::rendezvous::Store {
 public:
  GlooStoreAdapter(KeyValueStore& store, std::string_view prefix,
                   std::chrono::milliseconds timeout)
      : store_(store), prefix_(prefix), timeout_(timeout) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    Check(store_.Set(StrCat(prefix_, key),
                     std::string_view(data.data(), data.size())));
  }

  std::vector<char> get(const std::string& key) override {
    auto it = got_.find(key);
    if (it == got_.end()) {
      Fetch(key, timeout_);
      it = got_.find(key);
    }
    return std::vector<char>(it->second.begin(), it->second.end());
  }

  void wait(const std::vector<std::string>& keys) override {
    wait(keys, timeout_);
  }

  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    for (const std::string& key : keys) {
      if (!got_.contains(key)) Fetch(key, timeout);
    }
  }

  const Status& failure() const { return failure_; }
  // What get() returned, by key without the prefix.
  const std::map<std::string, std::string>& got() const { return got_; }

 private:
  void Fetch(const std::string& key, std::chrono::milliseconds timeout) {
    StatusOr<std::string> value = store_.Get(StrCat(prefix_, key), timeout);
    Check(value.status());
    got_[key] = *std::move(value);
  }

  void Check(const Status& st) {
    if (st.ok()) return;
    if (failure_.ok()) failure_ = st;
    throw gloo::IoException(std::string(Message(st)));
  }

  KeyValueStore& store_;
  const std::string prefix_;
  const std::chrono::milliseconds timeout_;
  std::map<std::string, std::string> got_;
  Status failure_;
};

// Gloo's message without the source position it begins with
// ("[/path/pair.cc:598] Connection closed by peer ...").
std::string GlooReason(const char* what) {
  std::string_view text(what);
  while (!text.empty() && text.front() == '[') {
    const size_t end = text.find("] ");
    if (end == std::string_view::npos) break;
    const std::string_view inside = text.substr(1, end - 1);
    // A source position has a path; a peer's address ("[10.0.0.1]:80")
    // is followed by a colon, not a space.
    if (inside.find('/') == std::string_view::npos &&
        inside.find(".cc:") == std::string_view::npos) {
      break;
    }
    text.remove_prefix(end + 2);
  }
  return std::string(text);
}

class GlooCollective final : public Collective {
 public:
  // `peers`: each peer's address as Gloo's messages name it, and its rank.
  GlooCollective(std::shared_ptr<gloo::transport::Device> device,
                 std::shared_ptr<gloo::rendezvous::Context> context, int rank,
                 int size, const CollectiveLimits& limits,
                 std::vector<std::pair<std::string, int>> peers)
      : device_(std::move(device)),
        context_(std::move(context)),
        rank_(rank),
        size_(size),
        limits_(limits),
        peers_(std::move(peers)) {
    if (limits_.cancel != nullptr) {
      watch_ =
          std::make_unique<CallWatch>(limits_.cancel, limits_.cancel_grace);
    }
  }

  ~GlooCollective() override = default;

  std::string_view backend() const override { return "Gloo"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Status AllReduceMean(Tensor* t) override {
    if (t->device() != Device::kCpu) {
      return InvalidArgumentError(
          "AllReduceMean: Gloo needs the tensor in host memory");
    }
    const int64_t n = t->size();
    if (n == 0 || size_ == 1) return OkStatus();
    DTF_RETURN_IF_ERROR(Run(StrCat("allreduce (mean of ", n, " floats)"),
                            [&](std::chrono::milliseconds timeout) {
                              Sum(t->data(), size_t(n), timeout);
                            }));
    const float scale = 1.0f / float(size_);
    for (float& x : t->span()) x *= scale;
    return OkStatus();
  }

  Status AllReduceMin(float* host_value) override {
    if (size_ == 1) return OkStatus();
    return Run(
        "allreduce (min of one float)", [&](std::chrono::milliseconds timeout) {
          AllreduceCall opts(context_);
          opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
          opts.setOutput(host_value, 1);
          opts.setReduceFunction(
              static_cast<void (*)(void*, const void*, const void*, size_t)>(
                  &gloo::min<float>));
          opts.setTag(NextTag());
          opts.setTimeout(timeout);
          Watched(opts, [](auto& o) { gloo::allreduce(o); });
        });
  }

  Status Broadcast(Tensor* t, int root) override {
    if (t->device() != Device::kCpu) {
      return InvalidArgumentError(
          "Broadcast: Gloo needs the tensor in host memory");
    }
    if (root < 0 || root >= size_) {
      return InvalidArgumentError(StrCat("Broadcast: root ", root, " of ",
                                         size_, " ranks is out of range"));
    }
    const int64_t n = t->size();
    if (n == 0 || size_ == 1) return OkStatus();
    return Run(StrCat("broadcast (", n, " floats from rank ", root, ")"),
               [&](std::chrono::milliseconds timeout) {
                 BroadcastCall opts(context_);
                 opts.setOutput(t->data(), size_t(n));
                 opts.setRoot(root);
                 opts.setTag(NextTag());
                 opts.setTimeout(timeout);
                 Watched(opts, [](auto& o) { gloo::broadcast(o); });
               });
  }

  StatusOr<std::vector<std::string>> AllGather(std::string_view mine) override {
    std::vector<std::string> out(static_cast<size_t>(size_));
    if (size_ == 1) {
      out[0] = std::string(mine);
      return out;
    }
    const std::string call =
        StrCat("allgather (", mine.size(), " bytes from rank ", rank_, ")");
    std::vector<int64_t> lengths(size_t(size_), 0);
    int64_t own = int64_t(mine.size());
    DTF_RETURN_IF_ERROR(Run(call, [&](std::chrono::milliseconds timeout) {
      AllgatherCall opts(context_);
      opts.setInput(&own, 1);
      opts.setOutput(lengths.data(), lengths.size());
      opts.setTag(NextTag());
      opts.setTimeout(timeout);
      Watched(opts, [](auto& o) { gloo::allgather(o); });
    }));
    std::vector<size_t> counts(lengths.begin(), lengths.end());
    size_t total = 0;
    for (size_t c : counts) total += c;
    if (total == 0) return out;
    std::string all(total, '\0');
    std::string input(mine);
    input.reserve(1);  // a valid pointer when this rank sends nothing
    DTF_RETURN_IF_ERROR(Run(call, [&](std::chrono::milliseconds timeout) {
      AllgathervCall opts(context_);
      opts.setInput(input.data(), input.size());
      opts.setOutput(all.data(), counts);
      opts.setTag(NextTag());
      opts.setTimeout(timeout);
      Watched(opts, [](auto& o) { gloo::allgatherv(o); });
    }));
    size_t at = 0;
    for (int r = 0; r < size_; ++r) {
      out[size_t(r)] = all.substr(at, counts[size_t(r)]);
      at += counts[size_t(r)];
    }
    return out;
  }

  Status Barrier() override {
    if (size_ == 1) return OkStatus();
    return Run("barrier", [&](std::chrono::milliseconds timeout) {
      BarrierCall opts(context_);
      opts.setTag(NextTag());
      opts.setTimeout(timeout);
      Watched(opts, [](auto& o) { gloo::barrier(o); });
    });
  }

  void Abort() override {
    if (failure_.empty()) failure_ = "aborted";
    Close();
  }

 private:
  void Sum(float* data, size_t n, std::chrono::milliseconds timeout) {
    AllreduceCall opts(context_);
    opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    opts.setOutput(data, n);
    opts.setReduceFunction(
        static_cast<void (*)(void*, const void*, const void*, size_t)>(
            &gloo::sum<float>));
    opts.setTag(NextTag());
    opts.setTimeout(timeout);
    Watched(opts, [](auto& o) { gloo::allreduce(o); });
  }

  uint32_t NextTag() { return next_tag_++; }

  // Runs `call(opts)`, Gloo's call, watched: given up, every pair fails
  // (what the call waits for from a pair fails with it) and the waits on
  // opts' buffers are interrupted, since Gloo's TCP pair does not fail a
  // send it was writing when its connection broke (a peer killed
  // mid-transfer). The call then fails at its next send or receive, or
  // ends with what it has; either way Run reports it given up.
  template <typename Opts, typename Call>
  void Watched(Opts& opts, Call call) {
    const CallWatch::Scope scope(watch_.get(), [this, &opts] {
      if (!pairs_failed_) {
        pairs_failed_ = true;
        FailEveryPair(*context_);
      }
      for (gloo::transport::UnboundBuffer* b : opts.buffers()) {
        b->abortWaitSend();
        b->abortWaitRecv();
      }
    });
    call(opts);
  }

  std::string RankName() const { return StrCat("rank ", rank_, " of ", size_); }

  // Closes every connection: peers in a call with this rank see it lost.
  void Close() {
    if (context_ == nullptr) return;
    try {
      context_->closeConnections();
    } catch (const std::exception&) {
      // Already broken: nothing more to close.
    }
    context_.reset();
    device_.reset();
  }

  // Runs `op` (given the time it may take) on the context; a Gloo
  // exception becomes the Status, the collective aborted.
  template <typename Op>
  Status Run(std::string_view call, Op op) {
    if (context_ == nullptr) {
      return FailedPreconditionError(
          StrCat(call, " on ", RankName(),
                 ": the Gloo collective was aborted after an earlier "
                 "failure: ",
                 failure_));
    }
    std::chrono::milliseconds timeout = limits_.timeout;
    if (const auto left = watch_ ? watch_->GraceLeft() : std::nullopt) {
      if (left->count() <= 0) {
        const Status st = CancelledError(
            StrCat(call, " on ", RankName(),
                   ": the run is being stopped; the Gloo collective was "
                   "aborted"));
        failure_ = std::string(Message(st));
        Close();
        return st;
      }
      timeout = std::min(timeout, *left);
    }
    Status st;
    try {
      op(timeout);
    } catch (const gloo::IoException& e) {
      st = Translate(call, timeout, GlooReason(e.what()));
    } catch (const gloo::EnforceNotMet& e) {
      st = InternalError(
          StrCat(call, " on ", RankName(), ": ", GlooReason(e.what())));
    } catch (const std::exception& e) {
      st = InternalError(
          StrCat(call, " on ", RankName(), ": ", GlooReason(e.what())));
    }
    if (watch_ != nullptr && watch_->gave_up()) {
      st = CancelledError(
          StrCat(call, " on ", RankName(), ": ", watch_->GaveUpWhy()));
    } else if (st.ok()) {
      return OkStatus();
    }
    st = Status(st.code(),
                StrCat(Message(st), "; the Gloo collective was aborted"));
    failure_ = std::string(Message(st));
    Close();
    return st;
  }

  // A lost peer is named by the address Gloo's message gives when it is
  // the one the peer listened on (the connection's other end shows its
  // own port otherwise), or when there is only one peer.
  Status Translate(std::string_view call, std::chrono::milliseconds timeout,
                   const std::string& reason) const {
    std::string peer;
    for (const auto& [address, r] : peers_) {
      if (reason.find(address) != std::string::npos) {
        peer = StrCat("peer rank ", r, " lost: ");
        break;
      }
    }
    const bool timed_out = reason.find("Timed out") != std::string::npos ||
                           reason.find("imeout") != std::string::npos;
    if (peer.empty() && !timed_out && peers_.size() == 1) {
      peer = StrCat("peer rank ", peers_.front().second, " lost: ");
    }
    if (peer.empty() && timed_out) {
      return DeadlineExceededError(StrCat(
          call, " on ", RankName(), ": not done within ", timeout.count(),
          " ms (", limits_.timeout_name, "): a peer hung or died: ", reason));
    }
    return UnavailableError(
        StrCat(call, " on ", RankName(), ": ", peer, reason));
  }

  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::rendezvous::Context> context_;
  const int rank_;
  const int size_;
  const CollectiveLimits limits_;
  const std::vector<std::pair<std::string, int>> peers_;
  uint32_t next_tag_ = 0;
  std::string failure_;
  // Gives up a call under way when the run stops, and fails one that
  // begins past the grace (limits_.cancel set); declared last, so that its
  // thread ends first. pairs_failed_: only on the watch's thread.
  bool pairs_failed_ = false;
  std::unique_ptr<CallWatch> watch_;
};

// Each peer's address for this rank's pair with it, as Gloo's messages
// name it ("[127.0.0.1]:41234"), from what the peers published: peer i's
// value holds its pairs' addresses, one entry per other rank in rank order
// (gloo::rendezvous::Context::connectFullMesh).
std::vector<std::pair<std::string, int>> GlooPeerAddresses(
    const std::map<std::string, std::string>& published, int rank, int size) {
  std::vector<std::pair<std::string, int>> peers;
  for (int i = 0; i < size; ++i) {
    if (i == rank) continue;
    auto it = published.find(std::to_string(i));
    if (it == published.end()) continue;
    const std::string& all = it->second;
    const size_t entry = all.size() / size_t(size - 1);
    const size_t at = size_t(rank > i ? rank - 1 : rank) * entry;
    if (entry == 0 || at + entry > all.size()) continue;
    try {
      const gloo::transport::tcp::Address address(std::vector<char>(
          all.begin() + long(at), all.begin() + long(at + entry)));
      peers.emplace_back(address.str(), i);
    } catch (const std::exception&) {
      // Not an address Gloo reads: that peer goes unnamed in messages.
    }
  }
  return peers;
}

// `host` as a numeric address: the first that getaddrinfo gives. (Gloo's
// own lookup faults on a name that does not resolve.)
StatusOr<std::string> GlooNumericHost(std::string_view host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string name(host);
  const int error = getaddrinfo(name.c_str(), nullptr, &hints, &found);
  if (error != 0 || found == nullptr) {
    return UnavailableError(
        StrCat("cannot resolve the host ", host, ": ",
               error != 0 ? gai_strerror(error) : "no address"));
  }
  char text[INET6_ADDRSTRLEN] = {};
  const void* address =
      found->ai_family == AF_INET6
          ? static_cast<const void*>(
                &reinterpret_cast<const sockaddr_in6*>(found->ai_addr)
                     ->sin6_addr)
          : static_cast<const void*>(
                &reinterpret_cast<const sockaddr_in*>(found->ai_addr)
                     ->sin_addr);
  const bool ok =
      inet_ntop(found->ai_family, address, text, sizeof(text)) != nullptr;
  freeaddrinfo(found);
  if (!ok) {
    return UnavailableError(StrCat("cannot use the address of ", host));
  }
  return std::string(text);
}

// Gloo writes to its sockets with write(2), which raises SIGPIPE once the
// peer has gone: that would end the process instead of failing the call.
// SIGPIPE is ignored from a join on (the write then fails with
// EPIPE, which Gloo reports), unless the process has a handler of its own.
void GlooIgnoreSigpipe() {
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) == 0 &&
      current.sa_handler == SIG_DFL) {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGPIPE, &ignore, nullptr);
  }
}

}  // namespace

StatusOr<std::unique_ptr<Collective>> JoinGloo(
    KeyValueStore& store, std::string_view prefix, std::string_view host,
    int rank, int size, const CollectiveLimits& limits,
    std::chrono::milliseconds join_timeout) {
  if (size < 1 || rank < 0 || rank >= size) {
    return InvalidArgumentError(
        StrCat("JoinGloo: rank ", rank, " of ", size, " is out of range"));
  }
  if (host.empty()) {
    return InvalidArgumentError("JoinGloo: no host to listen on");
  }
  if (limits.cancel != nullptr && limits.cancel->load()) {
    return CancelledError(StrCat("rank ", rank, " of ", size,
                                 ": stopped before joining the Gloo "
                                 "collective"));
  }
  GlooIgnoreSigpipe();
  const std::string rank_name = StrCat("rank ", rank, " of ", size);
  GlooStoreAdapter adapter(store, prefix, join_timeout);
  std::shared_ptr<gloo::transport::Device> device;
  StatusOr<std::string> numeric = GlooNumericHost(host);
  if (!numeric.ok()) {
    return Status(numeric.status().code(), StrCat("Gloo on ", rank_name, ": ",
                                                  Message(numeric.status())));
  }
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = *numeric;
    device = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    return UnavailableError(StrCat("Gloo on ", rank_name, ": cannot listen on ",
                                   host, ": ", GlooReason(e.what())));
  }
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
  context->setTimeout(join_timeout);
  try {
    context->connectFullMesh(adapter, device);
    context->setTimeout(limits.timeout);
  } catch (const std::exception& e) {
    if (!adapter.failure().ok()) {
      const Status& f = adapter.failure();
      return Status(f.code(),
                    StrCat("joining the Gloo collective as ", rank_name,
                           ": the ranks' addresses: ", Message(f)));
    }
    const std::string reason = GlooReason(e.what());
    const bool timed_out = reason.find("imeout") != std::string::npos ||
                           reason.find("Timed out") != std::string::npos;
    const std::string message =
        StrCat("joining the Gloo collective as ", rank_name, " (listening on ",
               host, "): ", reason);
    if (timed_out) {
      return DeadlineExceededError(
          StrCat(message, " (not within ", join_timeout.count(), " ms)"));
    }
    return UnavailableError(message);
  }
  return std::unique_ptr<Collective>(
      new GlooCollective(std::move(device), std::move(context), rank, size,
                         limits, GlooPeerAddresses(adapter.got(), rank, size)));
}

}  // namespace dtf::kernels
