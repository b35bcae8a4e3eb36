// A loopback TCP proxy that can break a call in flight: after Arm(), the
// first bytes a client sends on any connection make the proxy reset that
// connection (RST to both sides) instead of passing them on. The client's
// call then fails as it does when the peer is killed mid-call
// ("Connection reset by peer"), which a stopped server cannot reproduce.
// After Stall(), it forwards nothing for a while, connections kept open: a
// host that stops answering.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dtf::testing {

class ResetProxy {
 public:
  // Forwards connections to 127.0.0.1:`target_port`.
  explicit ResetProxy(int target_port);
  ~ResetProxy();
  ResetProxy(const ResetProxy&) = delete;
  ResetProxy& operator=(const ResetProxy&) = delete;

  // "127.0.0.1:port" of the proxy; empty when it could not listen.
  std::string address() const;
  // The next client bytes, on whichever connection, reset it.
  void Arm() { armed_ = true; }
  // Connections reset so far.
  int resets() const { return resets_; }
  // Forwards nothing, either way, for `for` from now (a host that stops
  // answering for a while, its connections open); then forwards on.
  void Stall(std::chrono::milliseconds for_);
  bool stalled() const;

 private:
  void AcceptLoop();
  void Pump(int client, int server);

  int target_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<bool> armed_{false};
  std::atomic<int> resets_{0};
  // Until when nothing is forwarded (steady clock, ns since its epoch).
  std::atomic<int64_t> stalled_until_{0};
  std::mutex mu_;
  std::vector<std::thread> pumps_;
  std::thread acceptor_;
};

}  // namespace dtf::testing
