// Processes of a local run: started in their own session and process group,
// signalled by group, and recognized by pid and start time so that a
// recycled pid is never signalled. Linux only (reads /proc).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/status.h"

namespace dtf::launch {

struct SpawnOptions {
  // argv[0] is the program's path (not searched in PATH).
  std::vector<std::string> argv;
  // Set on top of the calling process's environment.
  std::vector<std::pair<std::string, std::string>> env;
  // Standard output and error go to these files (created, truncated, 0644;
  // appended to with `append`, for a restarted task); standard input is
  // /dev/null.
  std::string stdout_file;
  std::string stderr_file;
  bool append = false;
  // The child gets SIGTERM when the process that spawned it dies, so a
  // launcher killed outright leaves no task behind.
  bool die_with_parent = true;
};

// A process this launcher started: its pid (also its process group and
// session id) and its start time in clock ticks since boot.
struct ProcessId {
  pid_t pid = 0;
  uint64_t start_ticks = 0;
};

// Forks and execs `options.argv` in a new session (setsid). Returns once
// the exec succeeded; an exec failure is returned as a Status naming the
// program ("…/dtf: No such file or directory").
StatusOr<ProcessId> Spawn(const SpawnOptions& options);

// The start time of `pid` (from /proc/<pid>/stat), or nullopt when there is
// no such process. A zombie still has one.
std::optional<uint64_t> ProcessStartTicks(pid_t pid);
// Whether `id` names a running process (not a zombie) started when it was.
bool ProcessRunning(const ProcessId& id);
// Pids of the processes in group `pgid` that are not zombies.
std::vector<pid_t> LiveGroupMembers(pid_t pgid);
// Whether the process group led by `leader` still holds processes that are
// the ones the launcher started: the leader itself (same start time), or,
// once it is gone, what is left of its group (a pid is never reused while
// its group exists).
bool GroupAlive(const ProcessId& leader);
// Sends `signal` to the group of `leader` when GroupAlive(leader); returns
// whether it did.
bool SignalGroup(const ProcessId& leader, int signal);

// How a child ended.
struct ExitInfo {
  // The exit status, or -1 when killed by a signal.
  int code = -1;
  // The signal that killed it, or 0.
  int signal = 0;
  // As a shell reports it: the code, or 128 + the signal.
  int ShellCode() const { return signal != 0 ? 128 + signal : code; }
  // "exited with status 3", "killed by SIGKILL".
  std::string Describe() const;
};
// Reaps `pid` (a child of this process) if it has ended; nullopt while it
// runs. An error (the pid is not a child) counts as an exit with code -1.
std::optional<ExitInfo> TryReap(pid_t pid);

// Stops process groups: SIGTERM to every group still alive, up to `grace`
// for them to go, then SIGKILL to what is left and up to a few seconds more.
// Groups for which `last` (if set) holds, parameter servers, get their
// SIGTERM once every other group is gone, or when half of `grace` has
// passed: a chief that saves a checkpoint as it stops still finds them.
// `tick` (if set) runs between polls, e.g. to reap children. Returns the
// names of the groups that had to be killed; an entry's first member is
// the label to report.
std::vector<std::string> StopGroups(
    const std::vector<std::pair<std::string, ProcessId>>& groups,
    std::chrono::milliseconds grace, const std::function<void()>& tick,
    const std::function<bool(const std::string&)>& last = nullptr);
// Whether `task` ("ps:0") is a parameter server: what StopGroups stops
// last.
bool IsParameterServer(const std::string& task);

}  // namespace dtf::launch
