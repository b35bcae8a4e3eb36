// The task side of the SSH backend (`dtf task exec|signal`, run on the
// task's host through SSH): starts one task detached from the SSH session
// and records what becomes of it, in the task's directory on that host:
//
//   pid        "pid start_ticks" of the task (its process group and
//              session leader), once it runs
//   stdout, stderr  its output
//   exit.json  how it ended (lib/launch/run_registry.h), written by a
//              monitor process that waits for it
//   stop       present once `dtf task signal` stopped it on purpose
//
// The environment and nothing else comes from a 0600 file
// (NAME=VALUE entries, each ended by a NUL byte), never the command line.
#pragma once

#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/process.h"

namespace dtf::launch {

inline constexpr char kStopMarkerFile[] = "stop";

struct TaskExecOptions {
  std::string task;      // "worker:1", for exit.json
  std::string dir;       // the task's directory; must exist
  std::string env_file;  // "" for none
  bool append = false;   // keep earlier output (a restarted task)
  std::vector<std::string> argv;
};

// Forks a monitor in a session of its own (away from the SSH session),
// which starts the task (Spawn: its own session and process group, dying
// with the monitor), writes the pid file, waits for it and writes
// exit.json. Returns once the task has started (or failed to: the exec's
// error). The calling process may exit at once.
StatusOr<ProcessId> StartMonitoredTask(const TaskExecOptions& options);

// Signals the task recorded in `dir`'s pid file (by process group, never a
// recycled pid), first leaving the stop marker so that exit.json says
// "stopped". Returns whether a live task was signalled.
StatusOr<bool> SignalTask(const std::string& dir, int signal);

// The env file's entries; InvalidArgument naming the file for an entry
// without '='.
StatusOr<std::vector<std::pair<std::string, std::string>>> ReadEnvFile(
    const std::string& path);
// The env file's bytes for `env`.
std::string EnvFileText(
    const std::vector<std::pair<std::string, std::string>>& env);

}  // namespace dtf::launch
