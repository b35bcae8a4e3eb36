// dtf: wires the subcommands (cmd/app.cc) to the process.
#include <csignal>

#include "cmd/app.h"
#include "cmd/storage_env.h"

namespace {

// Set by SIGINT/SIGTERM; long-running subcommands poll it and stop cleanly.
std::atomic<bool> interrupted{false};

void OnSignal(int) { interrupted.store(true); }

}  // namespace

int main(int argc, char** argv) {
  struct sigaction sa = {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  dtf::cli::ConfigureStorageFromEnvironment();
  dtf::cli::Context ctx;
  ctx.console = dtf::cli::Console::FromEnvironment();
  ctx.cancel = &interrupted;
  return dtf::cli::RunDtf(argc, argv, &ctx);
}
