// Session's state, shared by session_impl.cc (connect, exec, keepalive)
// and sftp.cc. Internal to lib/launch/ssh.
#pragma once

#include <libssh/callbacks.h>
#include <libssh/libssh.h>
#include <libssh/sftp.h>

#include <chrono>
#include <functional>
#include <string>

#include "lib/base/status.h"
#include "lib/launch/ssh/session.h"
#include "lib/launch/ssh/transport.h"

namespace dtf::launch::ssh {

struct Session::Impl {
  Target target;
  std::string label;
  std::string user;
  HostKey host_key;
  // Outlives `transport`, which points at it.
  struct ssh_callbacks_struct callbacks = {};
  Transport transport;
  sftp_session sftp = nullptr;  // opened by Sftp()
  std::chrono::steady_clock::time_point last_activity =
      std::chrono::steady_clock::now();

  ~Impl() {
    if (sftp != nullptr) sftp_free(sftp);
  }
  ssh_session session() const { return transport.session.get(); }
  void Touch() { last_activity = std::chrono::steady_clock::now(); }
  // The SFTP session, started on first use.
  StatusOr<sftp_session> Sftp();
  // Writes `path` through "<path>.part-<random>", filled by `fill`, then
  // renamed over `path` with `owner`->Rename.
  Status WriteVia(Session* owner, const std::string& path, int mode,
                  const std::function<Status(sftp_file)>& fill);
};

}  // namespace dtf::launch::ssh
