// Real OpenSSH servers for the lib/launch/ssh tests, started through
// tests/launch/ssh/sshd.sh on loopback addresses (127.0.0.x) at free ports
// (another one when some other program takes the first), with all their
// state (keys, known_hosts, logs) in one directory.
#pragma once

#include <memory>
#include <string>

#include "lib/base/status.h"
#include "lib/launch/ssh/session.h"

namespace dtf::launch::ssh::testing {

// Why servers cannot be started here ("" when they can): no /usr/sbin/sshd
// or no ssh-keygen.
std::string SshdUnavailableReason();

// Runs `sshd.sh <args>`; the error carries its output.
Status RunSshdScript(const std::string& args);

// A TCP port on `address` that refuses connections for as long as this
// object lives: bound by it and never listened on, so no other program can
// take it meanwhile. port() is 0 when nothing could be bound.
class ClosedPort {
 public:
  explicit ClosedPort(const std::string& address);
  ~ClosedPort();
  ClosedPort(const ClosedPort&) = delete;
  ClosedPort& operator=(const ClosedPort&) = delete;

  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// The local user's name (what the servers accept).
std::string LocalUser();

// One server. `dir` holds the client key (dir/id_ed25519, authorized by
// every server in that dir) and dir/known_hosts.
class Sshd {
 public:
  // Starts server `name` on `address` at a free port; with `known`, its host
  // key is added to dir/known_hosts; without `sftp`, the server has no SFTP
  // subsystem.
  static StatusOr<std::unique_ptr<Sshd>> Start(const std::string& dir,
                                               const std::string& name,
                                               const std::string& address,
                                               bool known = true,
                                               bool sftp = true);
  ~Sshd();  // stops the server

  Status Stop();
  // Starts again on the same address and port.
  Status Restart();
  // A new host key, used from the next Restart.
  Status NewHostKey();
  Status AddKnownHost();

  // host = address, port, the local user, dir/id_ed25519, dir/known_hosts,
  // config_file "none", a 5 s connect timeout.
  Target target() const;
  const std::string& address() const { return address_; }
  int port() const { return port_; }
  const std::string& dir() const { return dir_; }
  std::string host_public_key() const;  // the .pub file
  std::string log_file() const;

 private:
  // `port` 0: the first Restart picks one.
  Sshd(std::string dir, std::string name, std::string address, int port)
      : dir_(std::move(dir)),
        name_(std::move(name)),
        address_(std::move(address)),
        port_(port) {}
  std::string Args(const std::string& command, bool with_address) const;

  std::string dir_;
  std::string name_;
  std::string address_;
  int port_;
  bool sftp_ = true;
  bool running_ = false;
};

}  // namespace dtf::launch::ssh::testing
