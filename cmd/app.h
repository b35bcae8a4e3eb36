// The dtf command-line tree. main() only calls RunDtf(); each subcommand
// lives in its own file (cmd/<name>.cc) as an options struct, a Setup
// function that registers its flags, and a Run function.
#pragma once

#include <atomic>
#include <memory>
#include <optional>

#include "CLI/CLI.hpp"
#include "cmd/cli_output.h"
#include "lib/base/status.h"

namespace dtf::cli {

// What every subcommand gets from main: the terminal, the interrupt flag
// (set by SIGINT/SIGTERM), and where to leave its result.
struct Context {
  Console console;
  const std::atomic<bool>* cancel = nullptr;
  Status status;
  // Set by a subcommand whose exit code is not its status's (dtf launch
  // exits with the chief's code).
  std::optional<int> exit_code;
};

// Builds the whole tree; subcommands store their outcome in ctx->status
// when they run. Tests use it to list every subcommand and flag.
std::unique_ptr<CLI::App> BuildApp(Context* ctx);

// Parses argv, runs the chosen subcommand and returns the exit code
// (cmd/exit_code.h). Usage errors print a hint and return 2.
int RunDtf(int argc, char** argv, Context* ctx);

// The subcommands.
void SetupGenRecords(CLI::App* app, Context* ctx);
void SetupInit(CLI::App* app, Context* ctx);
void SetupInspect(CLI::App* app, Context* ctx);
void SetupTrain(CLI::App* app, Context* ctx);
void SetupServe(CLI::App* app, Context* ctx);
void SetupPredict(CLI::App* app, Context* ctx);
void SetupExport(CLI::App* app, Context* ctx);
void SetupLaunch(CLI::App* app, Context* ctx);
void SetupStatus(CLI::App* app, Context* ctx);
void SetupLogs(CLI::App* app, Context* ctx);
void SetupStop(CLI::App* app, Context* ctx);
void SetupScale(CLI::App* app, Context* ctx);
void SetupPack(CLI::App* app, Context* ctx);
void SetupTask(CLI::App* app, Context* ctx);
void SetupDoctor(CLI::App* app, Context* ctx);
void SetupHosts(CLI::App* app, Context* ctx);

}  // namespace dtf::cli
