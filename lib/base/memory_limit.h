// The memory limit a process runs under, so that a task that would pass it
// fails with an error naming what it was making, not an OOM kill: the
// tightest of its memory cgroup's limit (v2 memory.max, v1
// memory.limit_in_bytes, of its own cgroup or any above it) and its
// address-space limit (`ulimit -v`, RLIMIT_AS).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dtf {

struct MemoryLimit {
  int64_t bytes = 0;
  // What sets it, for messages: "cgroup memory.max (/sys/fs/cgroup/...)",
  // "cgroup memory.limit_in_bytes (...)" or "ulimit -v".
  std::string source;
  // True for `ulimit -v`, which bounds the address space (what is mapped),
  // not resident memory.
  bool address_space = false;
};

// The tightest limit that applies to this process; nullopt when none does
// (or none can be read). Reads /proc/self/cgroup, the cgroup files under
// `cgroup_root` (/sys/fs/cgroup) and getrlimit.
std::optional<MemoryLimit> ReadMemoryLimit(
    const std::string& cgroup_root = "/sys/fs/cgroup");

// What counts against `limit` now: the process's mapped address space for
// `ulimit -v`, else its resident memory (/proc/self/statm).
int64_t MemoryInUse(const MemoryLimit& limit);

}  // namespace dtf
