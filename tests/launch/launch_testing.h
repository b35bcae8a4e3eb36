// Shared by the lib/launch tests: a stand-in for `dtf serve` (a shell
// script) and process checks.
#pragma once

#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "lib/launch/plan.h"
#include "lib/launch/profile.h"
#include "tests/testing/temp_dir.h"

namespace dtf::launch::testing {

// Takes the arguments `dtf serve` takes. Writes its argv to <task dir>/argv
// and its environment's STANDIN_* to <task dir>/env, a line to stdout and
// one to stderr, then:
//   STANDIN_FAIL=<task>: that task prints "boom" on stderr and exits 3;
//   STANDIN_FAIL_ONCE=<task>: the same, unless started with --restore;
//   STANDIN_RESTORED_CHIEF_SLEEP=<s>: the chief started with --restore
//   sleeps that long (in place of STANDIN_CHIEF_SLEEP);
//   STANDIN_READY_WAIT=<path>: waits until <run dir>/<path> exists before
//   writing its ready file;
//   STANDIN_NO_READY=1: never writes it;
//   STANDIN_CHIEF_ADDRESS=<host:port>: the chief writes that as its address;
//   the chief sleeps STANDIN_CHIEF_SLEEP (default 0.5 s), or with
//   STANDIN_CHIEF_WAIT=<path> waits until <run dir>/<path> exists, and exits
//   with STANDIN_CHIEF_EXIT (default 0); every other task starts a child
//   (`sleep`, its pid in <task dir>/child.pid) and waits for it, until
//   stopped. A wait for a file gives up after 60 s: the task says so on
//   stderr and exits 9.
inline constexpr char kStandIn[] = R"(#!/bin/sh
role= index= ready= ps= workers= restore=
prev=
for a in "$@"; do
  if [ "$a" = --restore ]; then restore=1; fi
  case "$prev" in
    --role) role=$a ;;
    --index) index=$a ;;
    --ready-file) ready=$a ;;
    --ps) ps=$a ;;
    --workers) workers=$a ;;
  esac
  prev=$a
done
dir=$(dirname "$ready")
run=$(dirname "$dir")
task="$role:$index"
await() {
  i=0
  while [ ! -e "$run/$1" ]; do
    i=$((i + 1))
    if [ "$i" -gt 1200 ]; then
      echo "stand-in $task: $run/$1 did not appear within 60 s" >&2
      exit 9
    fi
    sleep 0.05
  done
}
printf '%s\n' "$@" > "$dir/argv"
env | grep '^STANDIN_\|^PROFILE_' | sort > "$dir/env"
echo "hello from $task"
echo "$task starting" >&2
if [ "$task" = "$STANDIN_FAIL" ]; then
  echo "boom: $task cannot start" >&2
  exit 3
fi
if [ "$task" = "$STANDIN_FAIL_ONCE" ] && [ -z "$restore" ]; then
  echo "boom: $task fails once" >&2
  exit 3
fi
if [ -n "$restore" ] && [ -n "$STANDIN_RESTORED_CHIEF_SLEEP" ]; then
  STANDIN_CHIEF_SLEEP=$STANDIN_RESTORED_CHIEF_SLEEP
fi
if [ -n "$STANDIN_READY_WAIT" ]; then await "$STANDIN_READY_WAIT"; fi
if [ "$role" = ps ]; then list=$ps; else list=$workers; fi
address=$(echo "$list" | cut -d, -f$((index + 1)))
if [ "$task" = "worker:0" ] && [ -n "$STANDIN_CHIEF_ADDRESS" ]; then
  address=$STANDIN_CHIEF_ADDRESS
fi
if [ -z "$STANDIN_NO_READY" ]; then
  printf '%s' "$address" > "$ready.tmp" && mv "$ready.tmp" "$ready"
fi
if [ "$task" = "worker:0" ]; then
  if [ -n "$STANDIN_CHIEF_WAIT" ]; then
    await "$STANDIN_CHIEF_WAIT"
  else
    sleep "${STANDIN_CHIEF_SLEEP:-0.5}"
  fi
  echo "chief done"
  exit "${STANDIN_CHIEF_EXIT:-0}"
fi
sleep 1000 &
echo $! > "$dir/child.pid"
wait
)";

// Writes the stand-in to <dir>/serve.sh, executable; returns its path.
inline std::string WriteStandIn(const dtf::testing::TempDir& dir) {
  const std::string path = dir.Join("serve.sh");
  dtf::testing::WriteFile(path, kStandIn);
  ::chmod(path.c_str(), 0755);
  return path;
}

// Whether `pid` names a live process (kill(pid, 0) succeeds and it is not a
// zombie waiting for a parent to reap it).
inline bool Alive(pid_t pid) {
  if (pid <= 0 || ::kill(pid, 0) != 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)),
                   std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  return close == std::string::npos || close + 2 >= text.size() ||
         text[close + 2] != 'Z';
}

// The pid in `path`, or 0.
inline pid_t ReadPid(const std::string& path) {
  std::ifstream in(path);
  pid_t pid = 0;
  in >> pid;
  return pid;
}

// Waits up to `timeout` for `done()`.
template <typename F>
bool WaitFor(F done, std::chrono::milliseconds timeout =
                         std::chrono::milliseconds(60000)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

// A plan request for `job` in `dir` running `binary`, from a profile text.
inline PlanRequest Request(
    const dtf::testing::TempDir& dir, const std::string& binary,
    const std::string& profile_text = "ps = 1\nworkers = 2\n") {
  PlanRequest r;
  r.job = dir.Join("dtf.toml");
  dtf::testing::WriteFile(r.job, "");
  r.binary = binary;
  r.profile =
      *ParseProfile(profile_text, dir.Join("profiles/test.toml"), "test");
  return r;
}

}  // namespace dtf::launch::testing
