// SFTP requests libssh 0.10 has no API for, sent on the SFTP channel
// directly: pipelined writes (several requests in flight; sftp_write waits
// for each reply) and the posix-rename@openssh.com extension. Each call
// leaves no request outstanding, so libssh's own SFTP calls can follow.
// Internal to lib/launch/ssh.
#pragma once

#include <libssh/sftp.h>

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "lib/base/status.h"

namespace dtf::launch::ssh {

// The size of one SFTP read or write request.
inline constexpr size_t kSftpChunk = 64 * 1024;

// Fills up to `size` bytes of `buffer`; 0 at the end.
using ReadFn = std::function<StatusOr<size_t>(char* buffer, size_t size)>;

// Writes what `next` yields to `file` from offset 0, in 64 KiB requests with
// up to 16 in flight. Errors name `path`.
Status WritePipelined(sftp_file file, std::string_view label,
                      std::string_view path, const ReadFn& next);

// rename(2) semantics: replaces `to`. Uses posix-rename@openssh.com when the
// server has it; otherwise removes `to` (a file) and renames, which leaves a
// moment without `to`.
Status PosixRename(sftp_session sftp, std::string_view label,
                   const std::string& from, const std::string& to);

}  // namespace dtf::launch::ssh
