// The preflight of an SSH run (`dtf doctor`, and the first step of every
// SSH launch): every host at once, each within a hard time limit —
// reachable, host key known, authenticated, its architecture and glibc
// able to run the shipped runtime, its work directory writable with room
// for the archives, the plan's ports free, the GPUs the hostfile promises
// visible, its clock near ours. One row per host; a failed row says what is
// wrong and what to do.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/plan.h"
#include "lib/launch/ssh/remote_host.h"

namespace dtf::launch {

struct PreflightOptions {
  // What the runtime needs: this machine's architecture, the glibc version
  // the env archive needs ("" for any), and the bytes to ship.
  std::string arch;
  std::string glibc;
  uint64_t need_bytes = 0;
  // Record unknown host keys (first contact) instead of failing.
  bool accept_new_host_keys = false;
  // The limit for each host's remote probe (the connection has the
  // profile's connect_timeout).
  std::chrono::milliseconds probe_timeout{20000};
  // A clock further off than this fails the host.
  std::chrono::milliseconds max_clock_skew{10000};
};

struct HostRow {
  std::string host;
  std::string label;  // user@host:port
  bool ok = false;
  // Columns: the state of each check ("ok", "unknown key", "2.36", ...).
  std::string ssh;
  std::string arch;
  std::string glibc;
  std::string disk;
  std::string ports;
  std::string gpus;
  std::string clock;
  // The job's records (data_preflight.h): "ok", "missing", "shipped"; ""
  // until checked.
  std::string data;
  // What is wrong and what to do, for a failed row.
  std::string problem;
  std::string fix;
  HostFacts facts;
};

struct PreflightResult {
  std::vector<HostRow> rows;  // plan.hosts order
  // The connected hosts, by plan.hosts index (null where it failed).
  std::vector<std::unique_ptr<RemoteHost>> hosts;
  // The options' probe_timeout, which the data checks that follow
  // (data_preflight.h) give each host's command too.
  std::chrono::milliseconds probe_timeout{20000};

  bool ok() const;
  // FailedPrecondition listing each failed host on a line of its own
  // ("h1: unknown host key ...; to trust it: ..."); OK when none failed.
  Status ToStatus() const;
};

// Checks every host of `plan` (backend "ssh") in parallel. The plan's
// fixed ports (base_port > 0) are checked; with base_port = 0 the ports
// are chosen afterwards from what each host has free (ChoosePorts).
PreflightResult Preflight(const Plan& plan, const PreflightOptions& options);

// Ports for the tasks of `plan` (plan order), from `first` up: each free on
// every host as the probe saw them, and no two alike.
std::vector<int> ChoosePorts(const Plan& plan, const PreflightResult& result,
                             int first = 20000);

// The rows as a table, failed hosts first, each followed by its problem
// and fix.
std::string PreflightTable(const PreflightResult& result);

}  // namespace dtf::launch
