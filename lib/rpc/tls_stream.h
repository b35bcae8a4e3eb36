// Byte streams between two tasks of a run under the run's mutual TLS
// (docs/protocol.md, "Transport security"), for traffic that does not go
// through gRPC: the CPU allreduce's ring (lib/runtime/train/tls_ring.h)
// and a parameter server's Session over TLS (lib/runtime/ps/
// ps_tls_server.h).
// Both ends present a certificate of the run's CA (TlsMaterial) and each
// checks that the other's names the task it expects ("worker-1"): a peer
// without one is dropped at the handshake, before a byte of the stream is
// read. TLS 1.3 only, no session tickets or early data (nothing a captured
// stream could replay).
//
// Blocking sockets: every read and write is bounded by the stream's
// timeout (DeadlineExceeded past it); a peer that closed or failed makes
// it Unavailable. Errors name the peer.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/rpc/credentials.h"

namespace dtf::rpc {

class TlsContext;

// One connection. Not thread-safe: one call at a time (the ring writes to
// one stream and reads from another), but Shutdown from any thread.
class TlsStream {
 public:
  ~TlsStream();
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  // Sends / receives exactly `n` bytes.
  Status WriteAll(const void* data, size_t n);
  Status ReadAll(void* data, size_t n);
  // Sends `parts` one after another, in as few system calls as they fit.
  Status WriteParts(std::span<const std::string_view> parts);
  // Returns once a read would find bytes (or the peer's end):
  // DeadlineExceeded at `deadline`, Cancelled once *cancel (may be null)
  // is true (looked at every 20 ms) or the stream is shut down.
  Status WaitReadable(std::chrono::steady_clock::time_point deadline,
                      const std::atomic<bool>* cancel);
  // Each read and write from now on fails (DeadlineExceeded) when it makes
  // no progress for `timeout` (at least 1 ms).
  void set_io_timeout(std::chrono::milliseconds timeout);
  // Ends the connection at once: a read or write under way in another
  // thread fails, and so does every later one.
  void Shutdown();
  // The common name of the peer's certificate.
  const std::string& peer() const { return peer_; }

 private:
  friend class TlsListener;
  friend StatusOr<std::unique_ptr<TlsStream>> TlsConnect(
      const std::string&, const TlsMaterial&, std::string_view,
      std::chrono::milliseconds, std::chrono::milliseconds);
  TlsStream(std::shared_ptr<TlsContext> ctx, int fd, void* ssl,
            std::string peer);
  Status Failed(std::string_view what, int ret);
  // Sends what the TLS layer wrote to memory.
  Status FlushWrites();

  std::shared_ptr<TlsContext> ctx_;
  int fd_;
  void* ssl_;   // SSL*
  void* wbio_;  // BIO*, owned by ssl_; appends to out_
  std::string out_;
  std::string peer_;
  std::atomic<bool> shut_{false};
};

// A listening socket whose connections are TLS streams.
class TlsListener {
 public:
  // Listens on `host` (an address or name of this host; port chosen by the
  // system) with `tls`, which must be on. Each stream it accepts times its
  // reads and writes out after `io_timeout`.
  static StatusOr<std::unique_ptr<TlsListener>> Listen(
      const std::string& host, const TlsMaterial& tls,
      std::chrono::milliseconds io_timeout);
  ~TlsListener();

  int port() const { return port_; }
  // The next connection whose peer completes the handshake with a
  // certificate of the run's CA naming `peer` (or, with a pattern
  // "worker-*", any "worker-<n>"; TlsStream::peer() then says which);
  // every other connection is closed and counted in rejected(). Each
  // handshake runs on a thread of its own (at most 5 s, 32 at once;
  // connections past those are closed), so a connection that never
  // finishes one holds up no other; those still running when a connection
  // is returned are kept for the next call, which must ask for the same
  // peer. DeadlineExceeded past `timeout`; Cancelled once *cancel (may be
  // null) is true.
  StatusOr<std::unique_ptr<TlsStream>> Accept(std::string_view peer,
                                              std::chrono::milliseconds timeout,
                                              const std::atomic<bool>* cancel);
  int rejected() const { return rejected_; }

  struct PendingHandshake;

 private:
  TlsListener(std::shared_ptr<TlsContext> ctx, int fd, int port,
              std::chrono::milliseconds io_timeout);
  std::shared_ptr<TlsContext> ctx_;
  int fd_;
  int port_;
  std::chrono::milliseconds io_timeout_;
  int rejected_ = 0;
  std::vector<std::shared_ptr<PendingHandshake>> pending_;
};

// A stream to `address` (host:port) whose server presents a certificate of
// the run's CA naming `peer`; retried until `timeout` while the address
// refuses connections (its task is still starting).
StatusOr<std::unique_ptr<TlsStream>> TlsConnect(
    const std::string& address, const TlsMaterial& tls, std::string_view peer,
    std::chrono::milliseconds timeout, std::chrono::milliseconds io_timeout);

}  // namespace dtf::rpc
