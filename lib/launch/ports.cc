#include "lib/launch/ports.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "lib/base/strings.h"

namespace dtf::launch {
namespace {

StatusOr<in_addr> Resolve(const std::string& host) {
  in_addr addr{};
  if (::inet_pton(AF_INET, host.c_str(), &addr) == 1) return addr;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc != 0 || found == nullptr) {
    return InvalidArgumentError(
        StrCat("host ", host, ": cannot resolve: ", ::gai_strerror(rc)));
  }
  addr = reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr;
  ::freeaddrinfo(found);
  return addr;
}

// A bound socket (fd, port) or the errno of the failure.
struct Bound {
  int fd = -1;
  int port = 0;
  int error = 0;
};

Bound BindTcp(in_addr addr, int port, bool reuse_port) {
  Bound b;
  b.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (b.fd < 0) {
    b.error = errno;
    return b;
  }
  const int one = 1;
  if (reuse_port &&
      (::setsockopt(b.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
       ::setsockopt(b.fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0)) {
    b.error = errno;
  }
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr = addr;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t len = sizeof(sa);
  if (b.error == 0 &&
      ::bind(b.fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    b.error = errno;
  }
  if (b.error == 0 &&
      ::getsockname(b.fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
    b.error = errno;
  }
  if (b.error != 0) {
    ::close(b.fd);
    b.fd = -1;
    return b;
  }
  b.port = ntohs(sa.sin_port);
  return b;
}

}  // namespace

HeldPort::HeldPort(HeldPort&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), port_(other.port_) {}

HeldPort& HeldPort::operator=(HeldPort&& other) noexcept {
  if (this != &other) {
    Release();
    fd_ = std::exchange(other.fd_, -1);
    port_ = other.port_;
  }
  return *this;
}

void HeldPort::Release() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

StatusOr<HeldPort> HoldPort(const std::string& host, int port) {
  DTF_ASSIGN_OR_RETURN(const in_addr addr, Resolve(host));
  // A port 0 bind may hand out a port that SO_REUSEPORT sockets of this
  // user already share; an exclusive bind first finds one nobody uses.
  constexpr int kAttempts = 20;
  int error = 0;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    Bound probe = BindTcp(addr, port, /*reuse_port=*/false);
    if (probe.fd < 0) {
      error = probe.error;
      break;
    }
    const int chosen = probe.port;
    ::close(probe.fd);
    Bound held = BindTcp(addr, chosen, /*reuse_port=*/true);
    if (held.fd >= 0) {
      HeldPort p;
      p.fd_ = held.fd;
      p.port_ = held.port;
      return p;
    }
    error = held.error;
    if (port != 0) break;  // a fixed port: no other to try
  }
  if (error == EADDRNOTAVAIL) {
    return InvalidArgumentError(
        StrCat("host ", host,
               ": not an address of this machine (the local backend runs "
               "every task here)"));
  }
  if (error == EADDRINUSE) {
    return UnavailableError(
        port == 0 ? StrCat("host ", host, ": no free port")
                  : StrCat("host ", host, ": port ", port, " is in use"));
  }
  return ErrnoToStatus(error, StrCat("host ", host, ": port ", port));
}

}  // namespace dtf::launch
