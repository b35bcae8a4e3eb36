// An SSH connection to one host (libssh): host key checked against
// known_hosts before anything else, then public-key authentication. Every
// error is one line naming the host ("ssh ada@10.0.0.5:22: ..."), with the
// fingerprint and the command to run where a host key is the cause. Never
// prompts. A Session is used by one thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "lib/base/status.h"
#include "lib/launch/ssh/target.h"

namespace dtf::launch::ssh {

// What a remote command did.
struct ExecResult {
  int exit_status = -1;  // -1 when killed by a signal or none was reported
  std::string out;
  std::string err;
};

class Session {
 public:
  // Connects, checks the host key and authenticates. Errors (each naming
  // Label()):
  //   Unavailable       refused, unreachable, name not resolved, closed
  //   DeadlineExceeded  no answer within connect_timeout
  //   FailedPrecondition  host key unknown ("... is not in <known_hosts>
  //                     (ED25519 SHA256:...); to trust it: <command>") or
  //                     changed ("HOST KEY CHANGED ... offers ED25519
  //                     SHA256:..., known_hosts:<line> has ...")
  //   PermissionDenied  no key was accepted (lists what was tried)
  static StatusOr<std::unique_ptr<Session>> Connect(const Target& target);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const Target& target() const;
  std::string Label() const { return target().Label(); }
  const HostKey& host_key() const;
  // The user the session authenticated as (resolved through the config).
  const std::string& user() const;

  // Runs `command` with the remote user's shell (sh -c semantics), feeding
  // it `input` on standard input, then EOF. DeadlineExceeded (naming the
  // host and the command) when it has not finished within `timeout`; the
  // channel is closed then, after asking the server to SIGKILL the command
  // (OpenSSH does so only for sessions under privilege separation, not for
  // root logins: there the command runs on until it writes to the closed
  // channel).
  StatusOr<ExecResult> Exec(const std::string& command,
                            std::chrono::milliseconds timeout,
                            std::string_view input = {});

  // SFTP, on one subsystem channel opened on first use. Remote paths are
  // absolute or relative to the login directory. Errors name host and path.
  //
  // Whether `path` exists (any type).
  StatusOr<bool> Exists(const std::string& path);
  // mkdir -p with `mode` for the directories it creates.
  Status MakeDirs(const std::string& path, int mode = 0755);
  // Writes `data` to `path` with `mode`: to "<path>.part-<random>" first,
  // then renamed over `path`, so a reader never sees half a file.
  Status WriteFile(const std::string& path, std::string_view data, int mode);
  // Copies the local file to `path` the same way (64 KiB requests, 16 in
  // flight).
  Status Upload(const std::string& local_path, const std::string& path,
                int mode);
  // Up to `max` bytes of `path` from byte `offset` ("" at or past the end);
  // nullopt when the file does not exist.
  StatusOr<std::optional<std::string>> ReadAt(const std::string& path,
                                              uint64_t offset, size_t max);
  // The whole file (at most `max` bytes, else OutOfRange); nullopt when it
  // does not exist.
  StatusOr<std::optional<std::string>> ReadFile(const std::string& path,
                                                size_t max = 1 << 20);
  // rename(2) semantics: replaces `to` (POSIX rename extension when the
  // server has it).
  Status Rename(const std::string& from, const std::string& to);

  // Sends a keepalive when the session has been idle keepalive_seconds;
  // Unavailable once the connection is gone. Cheap to call often.
  Status KeepAlive();
  // Whether the connection is still there as far as libssh knows (false
  // once a read or write on it has failed); sends nothing.
  bool Connected();

  // The libssh session, for Tunnel (ssh_session).
  void* raw();

 private:
  struct Impl;
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Connects far enough to see the host key (no authentication) and returns
// it with whether known_hosts has it: "ok", "unknown" or "changed".
struct HostKeyCheck {
  HostKey key;
  std::string state;
  std::string known_hosts;  // the file checked
};
StatusOr<HostKeyCheck> CheckHostKey(const Target& target);

// Records the host's current key in known_hosts (creating the file 0600
// and its directory 0700 when missing), under the name and port OpenSSH
// would look it up by ("[host]:port" when the port is not 22). A changed
// key is replaced only with `replace_changed` (the old lines for that name
// are removed). Returns the key recorded.
StatusOr<HostKey> TrustHostKey(const Target& target, bool replace_changed);

}  // namespace dtf::launch::ssh
