// dtf: wires the subcommands (cmd/app.cc) to the process.
#include <sys/resource.h>

#include <csignal>

#include "cmd/app.h"
#include "cmd/storage_env.h"

namespace {

// Set by SIGINT/SIGTERM; long-running subcommands poll it and stop cleanly.
std::atomic<bool> interrupted{false};

void OnSignal(int) { interrupted.store(true); }

// Lifts the soft limit on open files to the hard one: a launch or doctor
// holds a connection (and a task's log files) per host, and the soft limit
// many systems start with (1024) is below a thousand hosts' worth.
void RaiseOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  if (limit.rlim_cur >= limit.rlim_max) return;
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);  // best effort: the old limit stays
}

}  // namespace

int main(int argc, char** argv) {
  struct sigaction sa = {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  dtf::cli::ConfigureStorageFromEnvironment();
  RaiseOpenFileLimit();
  dtf::cli::Context ctx;
  ctx.console = dtf::cli::Console::FromEnvironment();
  ctx.cancel = &interrupted;
  return dtf::cli::RunDtf(argc, argv, &ctx);
}
