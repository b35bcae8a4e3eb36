// Tunnel: a local port forwarded through a real OpenSSH server to a TCP
// echo server, with several connections at once.
#include "lib/launch/ssh/tunnel.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "lib/base/strings.h"
#include "tests/launch/ssh/ssh_testing.h"

namespace dtf::launch::ssh::testing {
namespace {

// Echoes every connection on 127.0.0.1 until destroyed.
class EchoServer {
 public:
  EchoServer() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(sa);
    bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
    listen(fd_, 16);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &length);
    port_ = ntohs(sa.sin_port);
    acceptor_ = std::thread([this] { AcceptLoop(); });
  }
  ~EchoServer() {
    stop_ = true;
    shutdown(fd_, SHUT_RDWR);
    acceptor_.join();
    for (std::thread& t : connections_) t.join();
    close(fd_);
  }
  int port() const { return port_; }

 private:
  void AcceptLoop() {
    while (!stop_) {
      struct pollfd p = {fd_, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      int client = accept(fd_, nullptr, nullptr);
      if (client < 0) continue;
      connections_.emplace_back([client] {
        char buffer[65536];
        ssize_t n;
        while ((n = read(client, buffer, sizeof(buffer))) > 0) {
          for (ssize_t done = 0; done < n;) {
            ssize_t w = write(client, buffer + done, n - done);
            if (w <= 0) break;
            done += w;
          }
        }
        close(client);
      });
    }
  }
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::vector<std::thread> connections_;
};

int ConnectLocal(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Sends `data` and reads as much back (concurrently, so large payloads do
// not deadlock on full buffers).
std::string RoundTrip(int fd, const std::string& data) {
  std::thread writer([&] {
    for (size_t done = 0; done < data.size();) {
      ssize_t n = write(fd, data.data() + done, data.size() - done);
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
  });
  std::string back;
  char buffer[65536];
  while (back.size() < data.size()) {
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n <= 0) break;
    back.append(buffer, static_cast<size_t>(n));
  }
  writer.join();
  return back;
}

using TunnelTest = SshdTest;

TEST_F(TunnelTest, ForwardsConcurrentConnections) {
  EchoServer echo;
  auto tunnel = Tunnel::Open(sshd_->target(), "127.0.0.1", echo.port());
  ASSERT_TRUE(tunnel.ok()) << tunnel.status();
  int port = (*tunnel)->local_port();
  EXPECT_EQ((*tunnel)->local_address(), StrCat("127.0.0.1:", port));

  int a = ConnectLocal(port);
  int b = ConnectLocal(port);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  // Interleaved small messages on both.
  for (int i = 0; i < 20; ++i) {
    std::string ma = StrCat("a", i);
    std::string mb = StrCat("bb", i);
    EXPECT_EQ(RoundTrip(a, ma), ma);
    EXPECT_EQ(RoundTrip(b, mb), mb);
  }
  // Large payloads on both at once.
  std::string big_a(4 << 20, 'a');
  std::string big_b(3 << 20, 'b');
  std::string back_a, back_b;
  std::thread ta([&] { back_a = RoundTrip(a, big_a); });
  std::thread tb([&] { back_b = RoundTrip(b, big_b); });
  ta.join();
  tb.join();
  EXPECT_TRUE(back_a == big_a) << back_a.size();
  EXPECT_TRUE(back_b == big_b) << back_b.size();

  // Closing our side closes the far side, which closes ours.
  shutdown(a, SHUT_WR);
  char byte;
  EXPECT_EQ(read(a, &byte, 1), 0);
  close(a);
  close(b);

  // Many short connections, several open at once.
  std::vector<std::thread> clients;
  std::atomic<int> ok{0};
  for (int i = 0; i < 8; ++i) {
    clients.emplace_back([&, i] {
      int fd = ConnectLocal(port);
      std::string m = StrCat("client ", i);
      if (fd >= 0 && RoundTrip(fd, m) == m) ++ok;
      close(fd);
    });
  }
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(ok, 8);
}

TEST_F(TunnelTest, ReconnectsAfterTheServerRestarts) {
  EchoServer echo;
  auto tunnel = Tunnel::Open(sshd_->target(), "127.0.0.1", echo.port());
  ASSERT_TRUE(tunnel.ok()) << tunnel.status();
  int port = (*tunnel)->local_port();
  int fd = ConnectLocal(port);
  EXPECT_EQ(RoundTrip(fd, "before"), "before");
  ASSERT_TRUE(sshd_->Restart().ok());
  // The forward on the lost connection ends.
  struct pollfd p = {fd, POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 10000), 1);
  char byte;
  EXPECT_LE(read(fd, &byte, 1), 0);
  close(fd);
  fd = ConnectLocal(port);
  EXPECT_EQ(RoundTrip(fd, "after"), "after");
  close(fd);
}

TEST_F(TunnelTest, OpenFailsLikeConnect) {
  Target target = sshd_->target();
  ClosedPort closed(target.host);
  ASSERT_GT(closed.port(), 0);
  target.port = closed.port();
  auto tunnel = Tunnel::Open(target, "127.0.0.1", 1);
  EXPECT_EQ(tunnel.status().code(), StatusCode::kUnavailable)
      << tunnel.status();
}

}  // namespace
}  // namespace dtf::launch::ssh::testing
