// Files a user names for a command's output (predict --output, train
// --metrics-out): "-" is stdout; a symlink is written through, to its
// target; anything else that is not a regular file (a FIFO, a device such
// as /dev/full or /dev/stdout) is refused rather than replaced.
#pragma once

#include <string>
#include <string_view>

#include "lib/base/status.h"

namespace dtf::cli {

// The regular file that writing `path` replaces: `path` with its symlinks
// followed (the target need not exist yet). InvalidArgument naming `flag`
// and `path` when that is not, or would not be, a regular file; "-" is
// returned as it is.
StatusOr<std::string> OutputTarget(std::string_view flag,
                                   const std::string& path);

// Writes `contents` to stdout ("-") or atomically to OutputTarget(path)
// (a temporary file beside the target, fsync, rename): on failure the
// target is left as it was.
Status WriteOutput(std::string_view flag, const std::string& path,
                   std::string_view contents);

}  // namespace dtf::cli
