// Opening an SSH transport for a Target: options from the Target and the
// OpenSSH client configuration, then TCP (or ProxyCommand) connect and key
// exchange. No host-key check and no authentication: the callers (Connect,
// CheckHostKey, TrustHostKey) do those. Internal to lib/launch/ssh.
#pragma once

#include <libssh/libssh.h>

#include <chrono>
#include <memory>
#include <string>

#include "lib/base/status.h"
#include "lib/launch/ssh/target.h"

namespace dtf::launch::ssh {

// Disconnects and frees.
struct SessionDeleter {
  void operator()(ssh_session session) const;
};
using SessionPtr = std::unique_ptr<ssh_session_struct, SessionDeleter>;

struct Transport {
  SessionPtr session;
  std::string known_hosts;  // the known_hosts file in use (absolute)
  // Whether /etc/ssh/ssh_known_hosts is consulted as well (only when
  // Target::known_hosts is "").
  bool global_known_hosts = false;
};

// Connects as far as the key exchange. Errors as Session::Connect's
// (Unavailable, DeadlineExceeded; InvalidArgument/NotFound for a bad Target
// or configuration file).
StatusOr<Transport> OpenTransport(const Target& target);

// `path` with a leading "~" replaced by the user's home directory (from the
// password database, as OpenSSH does).
std::string ExpandHome(const std::string& path);

// Bounds each blocking libssh call on `session` by `timeout` (at least 1 ms).
void SetTimeout(ssh_session session, std::chrono::milliseconds timeout);

// The session's option as a string ("" when unset).
std::string GetOption(ssh_session session, ssh_options_e option);

}  // namespace dtf::launch::ssh
