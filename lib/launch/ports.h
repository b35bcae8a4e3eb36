// Free TCP ports for the tasks of a local run, held from the moment they are
// chosen until the task that will serve on one has bound it.
#pragma once

#include <string>

#include "lib/base/status.h"

namespace dtf::launch {

// A TCP port held by a socket bound with SO_REUSEADDR|SO_REUSEPORT and not
// listening: no other program can take it, but a task that binds it with
// SO_REUSEPORT (as gRPC servers do) can. Move-only; the destructor (or
// Release) closes the socket. Not thread-safe.
class HeldPort {
 public:
  HeldPort() = default;
  HeldPort(HeldPort&& other) noexcept;
  HeldPort& operator=(HeldPort&& other) noexcept;
  HeldPort(const HeldPort&) = delete;
  HeldPort& operator=(const HeldPort&) = delete;
  ~HeldPort() { Release(); }

  int port() const { return port_; }
  bool held() const { return fd_ >= 0; }
  void Release();

 private:
  friend StatusOr<HeldPort> HoldPort(const std::string& host, int port);
  int fd_ = -1;
  int port_ = 0;
};

// Holds `port` on `host` (an IPv4 address or a name resolving to one on
// this machine); port 0 picks a free one. The port is first bound
// exclusively, so a port some other program already uses (even with
// SO_REUSEPORT) is refused: Unavailable "host 127.0.0.1: port 5000 is in
// use". InvalidArgument when `host` is not an address of this machine.
StatusOr<HeldPort> HoldPort(const std::string& host, int port);

}  // namespace dtf::launch
