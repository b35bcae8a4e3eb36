#include "lib/rpc/tls_stream.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include "lib/base/decimal.h"
#include "lib/base/strings.h"
#include "lib/rpc/appending_bio.h"

namespace dtf::rpc {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How much WriteAll encrypts before it sends.
constexpr size_t kWriteChunkBytes = size_t(1) << 20;

// The run's TLS set-up shared by a listener and its streams.
class TlsContext {
 public:
  ~TlsContext() { SSL_CTX_free(ctx_); }
  static StatusOr<std::shared_ptr<TlsContext>> Create(const TlsMaterial& tls);
  SSL_CTX* get() const { return ctx_; }

 private:
  explicit TlsContext(SSL_CTX* ctx) : ctx_(ctx) {}
  SSL_CTX* ctx_;
};

namespace {

std::string OpenSslError() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "no OpenSSL error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

// The first certificate (or key) of `pem`; null when none parses.
X509* ReadCert(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), int(pem.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return cert;
}

EVP_PKEY* ReadKey(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), int(pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return key;
}

// Linux 6.11's cap on a socket's retransmission timeout (linux/tcp.h; not
// in older headers).
constexpr int kTcpRtoMaxMs = 44;

// A connected stream's socket options: no Nagle delay, and retransmissions
// at most a second apart where the kernel allows, so that data flows again
// within a second of a network cut healing rather than after TCP's
// exponential backoff (up to 13 s after an 8 s cut).
void TuneSocket(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  const int rto_max_ms = 1000;
  // Older kernels refuse it (ENOPROTOOPT): their backoff stays.
  (void)setsockopt(fd, IPPROTO_TCP, kTcpRtoMaxMs, &rto_max_ms,
                   sizeof(rto_max_ms));
}

void SetTimeout(int fd, milliseconds timeout) {
  timeval tv{};
  const auto ms = std::max<int64_t>(1, timeout.count());
  tv.tv_sec = ms / 1000;
  tv.tv_usec = (ms % 1000) * 1000;
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

// Splits "host:port" and strips the brackets of an IPv6 literal.
std::pair<std::string, std::string> SplitAddress(const std::string& address) {
  const size_t colon = address.rfind(':');
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[') {
    host = host.substr(1, host.size() - 2);
  }
  return {host, colon == std::string::npos ? "" : address.substr(colon + 1)};
}

std::string StripBrackets(const std::string& host) {
  if (host.size() >= 2 && host.front() == '[') {
    return host.substr(1, host.size() - 2);
  }
  return host;
}

// The common name of the peer's certificate, once the handshake is done.
std::string PeerName(SSL* ssl) {
  X509* cert = SSL_get_peer_certificate(ssl);
  if (cert == nullptr) return "";
  char buf[256] = {0};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, buf,
                            sizeof(buf));
  X509_free(cert);
  return buf;
}

// Whether certificate name `name` is what `peer` asks for: that name, or
// with a pattern "role-*" any "role-<n>" (n decimal digits).
bool PeerMatches(std::string_view name, std::string_view peer) {
  if (!peer.ends_with("-*")) return name == peer;
  const std::string_view prefix = peer.substr(0, peer.size() - 1);
  int64_t index = 0;
  return name.starts_with(prefix) &&
         ParseDecimal(name.substr(prefix.size()), 999999999, &index);
}

// The handshake on connected socket `fd` as a server (`accept`) or client;
// the SSL, or null with *why set. *name receives the peer's name.
SSL* Handshake(SSL_CTX* ctx, int fd, bool accept, std::string_view peer,
               std::string* name, std::string* why) {
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, fd);
  const int ret = accept ? SSL_accept(ssl) : SSL_connect(ssl);
  if (ret != 1) {
    *why = StrCat("TLS handshake failed: ", OpenSslError());
    SSL_free(ssl);
    return nullptr;
  }
  *name = PeerName(ssl);
  if (!PeerMatches(*name, peer)) {
    *why = StrCat("the peer's certificate names \"", *name, "\", not \"", peer,
                  "\"");
    SSL_free(ssl);
    return nullptr;
  }
  return ssl;
}

}  // namespace

StatusOr<std::shared_ptr<TlsContext>> TlsContext::Create(
    const TlsMaterial& tls) {
  if (!tls.on()) {
    return InvalidArgumentError("a TLS stream needs the run's certificates");
  }
  SSL_CTX* ctx = SSL_CTX_new(TLS_method());
  if (ctx == nullptr) return InternalError(OpenSslError());
  std::shared_ptr<TlsContext> out(new TlsContext(ctx));
  SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
  // AES-128-GCM first (TLS 1.3's mandatory suite, 128-bit security): 15%
  // faster than AES-256-GCM with AES-NI, and a bulk stream's cost is the
  // cipher's.
  SSL_CTX_set_ciphersuites(ctx,
                           "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:"
                           "TLS_CHACHA20_POLY1305_SHA256");
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                     nullptr);
  SSL_CTX_set_num_tickets(ctx, 0);
  SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
  SSL_CTX_set_max_early_data(ctx, 0);
  // Whole records and more per read(2): a bulk stream then costs one
  // system call per few records rather than two per record.
  SSL_CTX_set_read_ahead(ctx, 1);
  SSL_CTX_set_default_read_buffer_len(ctx, 256 << 10);
  X509* ca = ReadCert(tls.ca_pem);
  X509* cert = ReadCert(tls.cert_pem);
  EVP_PKEY* key = ReadKey(tls.key_pem);
  const bool ok = ca != nullptr && cert != nullptr && key != nullptr &&
                  X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), ca) == 1 &&
                  SSL_CTX_use_certificate(ctx, cert) == 1 &&
                  SSL_CTX_use_PrivateKey(ctx, key) == 1 &&
                  SSL_CTX_check_private_key(ctx) == 1;
  X509_free(ca);
  X509_free(cert);
  EVP_PKEY_free(key);
  if (!ok) {
    return InvalidArgumentError(StrCat(
        "the run's CA, certificate or key does not load: ", OpenSslError()));
  }
  return out;
}

TlsStream::TlsStream(std::shared_ptr<TlsContext> ctx, int fd, void* ssl,
                     std::string peer)
    : ctx_(std::move(ctx)), fd_(fd), ssl_(ssl), peer_(std::move(peer)) {
  // From now on records are written to memory and sent in large pieces
  // (FlushWrites): one send(2), and one wakeup of the reader, per many
  // records rather than per 16 KiB record.
  BIO* out = static_cast<BIO*>(NewAppendingBio(&out_));
  wbio_ = out;
  SSL_set0_wbio(static_cast<SSL*>(ssl_), out);
}

Status TlsStream::FlushWrites() {
  size_t sent = 0;
  while (sent < out_.size()) {
    const ssize_t w =
        ::send(fd_, out_.data() + sent, out_.size() - sent, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int sys = errno;
      if (shut_)
        return CancelledError(StrCat("writing to ", peer_, ": shut down"));
      if (sys == EAGAIN || sys == EWOULDBLOCK) {
        return DeadlineExceededError(
            StrCat("writing to ", peer_, ": no progress within the timeout"));
      }
      return UnavailableError(
          StrCat("writing to ", peer_, ": ", std::strerror(sys)));
    }
    sent += size_t(w);
  }
  out_.clear();
  return OkStatus();
}

TlsStream::~TlsStream() {
  SSL_free(static_cast<SSL*>(ssl_));
  close(fd_);
}

void TlsStream::set_io_timeout(milliseconds timeout) {
  SetTimeout(fd_, timeout);
}

void TlsStream::Shutdown() {
  shut_ = true;
  ::shutdown(fd_, SHUT_RDWR);
}

Status TlsStream::Failed(std::string_view what, int ret) {
  const int err = SSL_get_error(static_cast<SSL*>(ssl_), ret);
  const int sys = errno;
  if (shut_) return CancelledError(StrCat(what, " ", peer_, ": shut down"));
  if (err == SSL_ERROR_ZERO_RETURN) {
    return UnavailableError(StrCat(what, " ", peer_, ": the peer closed"));
  }
  if ((err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE ||
       err == SSL_ERROR_SYSCALL) &&
      (sys == EAGAIN || sys == EWOULDBLOCK)) {
    return DeadlineExceededError(
        StrCat(what, " ", peer_, ": no progress within the timeout"));
  }
  if (err == SSL_ERROR_SYSCALL) {
    return UnavailableError(
        StrCat(what, " ", peer_, ": ",
               sys == 0 ? "the peer closed" : std::strerror(sys)));
  }
  return UnavailableError(StrCat(what, " ", peer_, ": ", OpenSslError()));
}

Status TlsStream::WriteAll(const void* data, size_t n) {
  const std::string_view part(static_cast<const char*>(data), n);
  return WriteParts(std::span<const std::string_view>(&part, 1));
}

Status TlsStream::ReadAll(void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const int chunk = int(std::min<size_t>(n, INT_MAX / 2));
    errno = 0;
    const int ret = SSL_read(static_cast<SSL*>(ssl_), p, chunk);
    if (BIO_ctrl_pending(static_cast<BIO*>(wbio_)) > 0) {
      // What the read had to answer (an alert, a key update).
      DTF_RETURN_IF_ERROR(FlushWrites());
    }
    if (ret <= 0) return Failed("reading from", ret);
    p += ret;
    n -= size_t(ret);
  }
  return OkStatus();
}

Status TlsStream::WriteParts(std::span<const std::string_view> parts) {
  for (std::string_view part : parts) {
    while (!part.empty()) {
      const int chunk = int(std::min<size_t>(part.size(), kWriteChunkBytes));
      errno = 0;
      const int ret = SSL_write(static_cast<SSL*>(ssl_), part.data(), chunk);
      if (ret <= 0) return Failed("writing to", ret);
      part.remove_prefix(size_t(ret));
      if (BIO_ctrl_pending(static_cast<BIO*>(wbio_)) >= kWriteChunkBytes) {
        DTF_RETURN_IF_ERROR(FlushWrites());
      }
    }
  }
  return FlushWrites();
}

Status TlsStream::WaitReadable(Clock::time_point deadline,
                               const std::atomic<bool>* cancel) {
  // Bytes the TLS layer holds already (read ahead, or a record read in
  // part) need no wait.
  if (SSL_pending(static_cast<SSL*>(ssl_)) > 0 ||
      SSL_has_pending(static_cast<SSL*>(ssl_)) == 1) {
    return OkStatus();
  }
  constexpr milliseconds kPoll{20};
  while (true) {
    if (shut_)
      return CancelledError(StrCat("reading from ", peer_, ": shut down"));
    if (cancel != nullptr && cancel->load()) {
      return CancelledError(StrCat("reading from ", peer_, ": cancelled"));
    }
    // Rounded up: the deadline is never taken for passed before it is.
    const auto left = std::chrono::ceil<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      return DeadlineExceededError(
          StrCat("reading from ", peer_, ": no answer in time"));
    }
    pollfd p{fd_, POLLIN, 0};
    // poll(2) takes an int of milliseconds: a far deadline in slices.
    const int64_t wait = std::min<int64_t>(
        left.count(), cancel != nullptr ? kPoll.count() : INT_MAX);
    const int ready = poll(&p, 1, int(wait));
    if (ready > 0) return OkStatus();
    if (ready < 0 && errno != EINTR) {
      return UnavailableError(
          StrCat("reading from ", peer_, ": ", std::strerror(errno)));
    }
  }
}

TlsListener::TlsListener(std::shared_ptr<TlsContext> ctx, int fd, int port,
                         milliseconds io_timeout)
    : ctx_(std::move(ctx)), fd_(fd), port_(port), io_timeout_(io_timeout) {}

StatusOr<std::unique_ptr<TlsListener>> TlsListener::Listen(
    const std::string& host, const TlsMaterial& tls, milliseconds io_timeout) {
  DTF_ASSIGN_OR_RETURN(std::shared_ptr<TlsContext> ctx,
                       TlsContext::Create(tls));
  // A write to a peer that has gone must fail the call, not end the
  // process.
  struct sigaction old {};
  if (sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) {
    signal(SIGPIPE, SIG_IGN);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string name = StripBrackets(host);
  if (int rc = getaddrinfo(name.c_str(), "0", &hints, &found); rc != 0) {
    return UnavailableError(
        StrCat("cannot resolve ", host, ": ", gai_strerror(rc)));
  }
  int fd = socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const bool bound = fd >= 0 &&
                     bind(fd, found->ai_addr, found->ai_addrlen) == 0 &&
                     listen(fd, 16) == 0;
  freeaddrinfo(found);
  if (!bound) {
    const int sys = errno;
    if (fd >= 0) close(fd);
    return UnavailableError(
        StrCat("cannot listen on ", host, ": ", std::strerror(sys)));
  }
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port =
      addr.ss_family == AF_INET6
          ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
          : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  return std::unique_ptr<TlsListener>(
      new TlsListener(std::move(ctx), fd, port, io_timeout));
}

// One accepted connection's handshake, on a thread of its own, so that a
// peer that never finishes one holds up no other. Whoever comes second of
// the thread (done) and the listener (abandoned) frees the connection when
// the listener no longer wants it.
struct TlsListener::PendingHandshake {
  std::mutex mu;
  bool done = false;
  bool abandoned = false;
  int fd = -1;
  SSL* ssl = nullptr;
  std::string name;
  std::string why;
};

namespace {

using PendingHandshake = TlsListener::PendingHandshake;

void Drop(PendingHandshake& h) {
  if (h.ssl != nullptr) SSL_free(h.ssl);
  if (h.fd >= 0) close(h.fd);
  h.ssl = nullptr;
  h.fd = -1;
}

void Abandon(std::vector<std::shared_ptr<PendingHandshake>>& pending) {
  for (const auto& h : pending) {
    std::lock_guard<std::mutex> lock(h->mu);
    if (h->done) {
      Drop(*h);
    } else {
      h->abandoned = true;
    }
  }
  pending.clear();
}

// Handshakes in flight at once; connections past them are closed.
constexpr size_t kMaxPendingHandshakes = 32;

}  // namespace

TlsListener::~TlsListener() {
  Abandon(pending_);
  close(fd_);
}

StatusOr<std::unique_ptr<TlsStream>> TlsListener::Accept(
    std::string_view peer, milliseconds timeout,
    const std::atomic<bool>* cancel) {
  const auto deadline = Clock::now() + timeout;
  std::string last;
  for (;;) {
    // The handshakes that ended: the first with the peer wins.
    for (auto it = pending_.begin(); it != pending_.end();) {
      PendingHandshake& h = **it;
      std::unique_lock<std::mutex> lock(h.mu);
      if (!h.done) {
        ++it;
        continue;
      }
      if (h.ssl != nullptr) {
        const int fd = std::exchange(h.fd, -1);
        SSL* ssl = std::exchange(h.ssl, nullptr);
        std::string name = std::move(h.name);
        lock.unlock();
        pending_.erase(it);
        SetTimeout(fd, io_timeout_);
        return std::unique_ptr<TlsStream>(
            new TlsStream(ctx_, fd, ssl, std::move(name)));
      }
      ++rejected_;
      last = h.why;
      Drop(h);
      lock.unlock();
      it = pending_.erase(it);
    }
    if (cancel != nullptr && *cancel) {
      return CancelledError(StrCat("waiting for ", peer, ": cancelled"));
    }
    const auto left =
        std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      return DeadlineExceededError(
          StrCat(peer, " did not connect within ", timeout.count(), " ms",
                 last.empty() ? "" : StrCat(" (last refused: ", last, ")")));
    }
    pollfd p{fd_, POLLIN, 0};
    const int wait_ms = pending_.empty() ? 200 : 10;
    if (poll(&p, 1, int(std::min<int64_t>(left.count(), wait_ms))) <= 0) {
      continue;
    }
    const int fd = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    if (pending_.size() >= kMaxPendingHandshakes) {
      ++rejected_;
      close(fd);
      continue;
    }
    TuneSocket(fd);
    // A stranger that never finishes its handshake holds its own thread
    // for a few seconds at most.
    SetTimeout(fd, std::min(io_timeout_, milliseconds(5000)));
    auto h = std::make_shared<PendingHandshake>();
    h->fd = fd;
    pending_.push_back(h);
    std::thread([h, ctx = ctx_, want = std::string(peer)] {
      std::string name, why;
      SSL* ssl =
          Handshake(ctx->get(), h->fd, /*accept=*/true, want, &name, &why);
      std::lock_guard<std::mutex> lock(h->mu);
      h->ssl = ssl;
      h->name = std::move(name);
      h->why = std::move(why);
      h->done = true;
      if (h->abandoned) Drop(*h);
    }).detach();
  }
}

StatusOr<std::unique_ptr<TlsStream>> TlsConnect(const std::string& address,
                                                const TlsMaterial& tls,
                                                std::string_view peer,
                                                milliseconds timeout,
                                                milliseconds io_timeout) {
  DTF_ASSIGN_OR_RETURN(std::shared_ptr<TlsContext> ctx,
                       TlsContext::Create(tls));
  const auto [host, port] = SplitAddress(address);
  const auto deadline = Clock::now() + timeout;
  std::string why;
  while (Clock::now() < deadline) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
        rc != 0) {
      return UnavailableError(
          StrCat("cannot resolve ", address, ": ", gai_strerror(rc)));
    }
    const int fd = socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    SetTimeout(fd, std::min(io_timeout, milliseconds(5000)));
    const bool connected =
        fd >= 0 && connect(fd, found->ai_addr, found->ai_addrlen) == 0;
    freeaddrinfo(found);
    if (!connected) {
      why = std::strerror(errno);
      if (fd >= 0) close(fd);
      std::this_thread::sleep_for(milliseconds(100));
      continue;
    }
    TuneSocket(fd);
    std::string name;
    SSL* ssl = Handshake(ctx->get(), fd, /*accept=*/false, peer, &name, &why);
    if (ssl == nullptr) {
      close(fd);
      return UnavailableError(StrCat(peer, " (", address, "): ", why));
    }
    SetTimeout(fd, io_timeout);
    return std::unique_ptr<TlsStream>(
        new TlsStream(std::move(ctx), fd, ssl, std::string(peer)));
  }
  return DeadlineExceededError(StrCat("cannot connect to ", peer, " (", address,
                                      ") within ", timeout.count(),
                                      " ms: ", why));
}

}  // namespace dtf::rpc
