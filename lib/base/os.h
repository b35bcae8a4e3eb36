// Small wrappers over POSIX calls that several layers need: whole writes and
// reads on a file descriptor, and the path of the running program.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "lib/base/status.h"

namespace dtf {

// Writes all of `data` to `fd`, retrying short writes and EINTR; an error
// names `what` (the file or pipe).
Status WriteAllFd(int fd, std::string_view data, std::string_view what);

// Everything `fd` yields until end of file (or an error, which ends it).
std::string ReadAllFd(int fd);

// This program's path, from /proc/self/exe.
StatusOr<std::string> SelfExecutable();

// The resident memory of this process in bytes (/proc/self/statm); 0 when
// it cannot be read.
int64_t ResidentBytes();

// `bytes` for people: "812K", "1.4M", "3.2G" (powers of 1024).
std::string HumanBytes(int64_t bytes);

}  // namespace dtf
