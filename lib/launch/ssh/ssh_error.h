// libssh and SFTP failures as Status, each message naming the host
// ("ssh ada@10.0.0.5:22: open channel: Socket error: disconnected").
// Internal to lib/launch/ssh.
#pragma once

#include <libssh/libssh.h>
#include <libssh/sftp.h>

#include <string>
#include <string_view>

#include "lib/base/status.h"

namespace dtf::launch::ssh {

// "ssh <label>: ", the start of every error message.
std::string ErrorPrefix(std::string_view label);

// The session's last error: "ssh <label>: <what>: <libssh's message>".
// Timeouts are DeadlineExceeded, requests the server refused
// PermissionDenied, everything else (refused, unreachable, disconnected)
// Unavailable.
Status SshError(ssh_session session, std::string_view label,
                std::string_view what);

// The SFTP session's last error on `path`: "ssh <label>: <what> <path>: no
// such file" (NotFound, PermissionDenied, AlreadyExists, Unavailable when the
// connection is gone, ...).
Status SftpError(sftp_session sftp, std::string_view label,
                 std::string_view what, std::string_view path);

// An SFTP status `code` (SSH_FX_*) for `what` on `path` as a Status (the
// code must not be SSH_FX_OK).
Status SftpStatusError(int code, std::string_view label, std::string_view what,
                       std::string_view path);

// Whether the last SFTP error says the path does not exist.
bool SftpNotFound(sftp_session sftp);

}  // namespace dtf::launch::ssh
