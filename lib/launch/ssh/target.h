// Where an SSH connection goes and what the server proved itself with: the
// Target a Session, a transport or a host-key check is opened for, and the
// server's HostKey. Plain values, shared by every file of lib/launch/ssh.
#pragma once

#include <chrono>
#include <string>

namespace dtf::launch::ssh {

// Where and how to connect. Empty fields come from the SSH configuration
// file (Host/HostName/User/Port/IdentityFile/ProxyJump/ProxyCommand), then
// from OpenSSH's defaults.
struct Target {
  // A host name, alias from the configuration file, or address.
  std::string host;
  std::string user;  // "": the config's User, else the local user
  int port = 0;      // 0: the config's Port, else 22
  // A private key file; "" tries ssh-agent, then the config's IdentityFile
  // and the default keys (~/.ssh/id_ed25519, id_ecdsa, id_rsa).
  std::string identity_file;
  // The known_hosts file checked and (by TrustHostKey, or with
  // accept_new_host_key) written; "": ~/.ssh/known_hosts.
  std::string known_hosts;
  // The OpenSSH client configuration; "": ~/.ssh/config when it exists;
  // "none": read none.
  std::string config_file;
  // TCP connect plus handshake; the whole of Connect is bounded by about
  // twice this.
  std::chrono::milliseconds connect_timeout{10000};
  // Seconds between keepalives on an idle session (0: none).
  int keepalive_seconds = 15;
  // Record a host key that known_hosts does not have (first contact) and
  // go on. A changed key is refused all the same.
  bool accept_new_host_key = false;
  // Appended to host-key errors: the command that trusts this host
  // ("dtf hosts trust h1 --profile cluster"). "": "dtf hosts trust <host>".
  std::string trust_command;

  // "user@host:port" as given (empty parts left out), for messages.
  std::string Label() const;
};

// A server's host key.
struct HostKey {
  std::string type;         // "ssh-ed25519", "ecdsa-sha2-nistp256", ...
  std::string fingerprint;  // "SHA256:..." as ssh-keygen -l shows it
};

}  // namespace dtf::launch::ssh
