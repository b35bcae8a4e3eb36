// A local port forwarded over SSH (ssh -L): connections to
// 127.0.0.1:local_port() reach remote_host:remote_port as the SSH server
// sees it. Runs on its own session and thread; closed when destroyed. When
// the SSH connection is lost, its forwarded connections end and the next
// accepted connection connects again (destruction then waits for that
// attempt, at most about twice connect_timeout).
#pragma once

#include <memory>
#include <string>

#include "lib/base/status.h"
#include "lib/launch/ssh/session.h"

namespace dtf::launch::ssh {

class Tunnel {
 public:
  // Connects (as Session::Connect), listens on 127.0.0.1 on a free port and
  // forwards each accepted connection through a direct-tcpip channel.
  static StatusOr<std::unique_ptr<Tunnel>> Open(const Target& target,
                                                const std::string& remote_host,
                                                int remote_port);
  ~Tunnel();
  int local_port() const;
  // "127.0.0.1:<local_port>".
  std::string local_address() const;

 private:
  struct Impl;
  explicit Tunnel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dtf::launch::ssh
