#include "tests/testing/reset_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace dtf::testing {
namespace {

// Closes `fd` with an RST rather than a FIN.
void Reset(int fd) {
  linger l{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
  close(fd);
}

sockaddr_in Loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(uint16_t(port));
  return a;
}

// Writes all of `buf`; false when the peer is gone.
bool WriteAll(int fd, const char* buf, ssize_t n) {
  while (n > 0) {
    const ssize_t w = send(fd, buf, size_t(n), MSG_NOSIGNAL);
    if (w <= 0) return false;
    buf += w;
    n -= w;
  }
  return true;
}

}  // namespace

ResetProxy::ResetProxy(int target_port) : target_port_(target_port) {
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a = Loopback(0);
  socklen_t len = sizeof(a);
  if (listen_fd_ < 0 ||
      bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      listen(listen_fd_, 16) != 0 ||
      getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    return;
  }
  port_ = ntohs(a.sin_port);
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

ResetProxy::~ResetProxy() {
  stop_ = true;
  if (acceptor_.joinable()) acceptor_.join();
  if (listen_fd_ >= 0) close(listen_fd_);
  std::lock_guard<std::mutex> lock(mu_);
  for (std::thread& t : pumps_) t.join();
}

std::string ResetProxy::address() const {
  return port_ == 0 ? "" : "127.0.0.1:" + std::to_string(port_);
}

void ResetProxy::AcceptLoop() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    const int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    const int server = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const sockaddr_in a = Loopback(target_port_);
    if (server < 0 || connect(server, reinterpret_cast<const sockaddr*>(&a),
                              sizeof(a)) != 0) {
      if (server >= 0) close(server);
      Reset(client);
      continue;
    }
    // As gRPC's own sockets and dtf's tunnels: no Nagle delay. Without it a
    // small segment waits for the peer's delayed ACK (40 ms) on every
    // exchange of a long-lived stream.
    const int on = 1;
    setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
    setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
    std::lock_guard<std::mutex> lock(mu_);
    pumps_.emplace_back([this, client, server] { Pump(client, server); });
  }
}

void ResetProxy::Stall(std::chrono::milliseconds for_) {
  stalled_until_ =
      (std::chrono::steady_clock::now() + for_).time_since_epoch().count();
}

bool ResetProxy::stalled() const {
  return std::chrono::steady_clock::now().time_since_epoch().count() <
         stalled_until_.load();
}

void ResetProxy::Pump(int client, int server) {
  char buf[1 << 16];
  pollfd fds[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
  while (!stop_) {
    if (stalled()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    if (poll(fds, 2, 50) <= 0) continue;
    if (fds[0].revents != 0) {
      const ssize_t n = recv(client, buf, sizeof(buf), 0);
      if (n <= 0) break;
      if (armed_.exchange(false)) {
        ++resets_;
        Reset(client);
        Reset(server);
        return;
      }
      if (!WriteAll(server, buf, n)) break;
    }
    if (fds[1].revents != 0) {
      const ssize_t n = recv(server, buf, sizeof(buf), 0);
      if (n <= 0 || !WriteAll(client, buf, n)) break;
    }
  }
  close(client);
  close(server);
}

}  // namespace dtf::testing
