#include "cmd/app.h"

#include <algorithm>
#include <iostream>

#include "cmd/exit_code.h"
#include "cmd/manual.h"
#include "cmd/usage.h"
#include "lib/base/build_config.h"
#include "lib/base/os.h"
#include "lib/base/strings.h"

namespace dtf::cli {

std::unique_ptr<CLI::App> BuildApp(Context* ctx) {
  auto app = std::make_unique<CLI::App>(
      "dtf: distributed training from a laptop to a cluster, in one binary.",
      "dtf");
  app->set_version_flag(
      "--version",
      StrCat("dtf ", kVersion, " (cuda: ", kHaveCuda ? "yes" : "no", ")"),
      "Print the version and exit");
  app->require_subcommand(1);
  app->footer(
      "Run 'dtf help <command>' (or 'dtf <command> --help') for a command's "
      "flags; 'dtf help --man [<command>]' for its manual page, with the "
      "exit codes.");
  SetupGenRecords(app.get(), ctx);
  SetupInit(app.get(), ctx);
  SetupInspect(app.get(), ctx);
  SetupTrain(app.get(), ctx);
  SetupServe(app.get(), ctx);
  SetupPredict(app.get(), ctx);
  SetupExport(app.get(), ctx);
  SetupLaunch(app.get(), ctx);
  SetupStatus(app.get(), ctx);
  SetupLogs(app.get(), ctx);
  SetupStop(app.get(), ctx);
  SetupScale(app.get(), ctx);
  SetupPack(app.get(), ctx);
  SetupDoctor(app.get(), ctx);
  SetupHosts(app.get(), ctx);
  SetupTask(app.get(), ctx);
  return app;
}

namespace {

constexpr char kUsageHint[] =
    "Run 'dtf help' for the commands, 'dtf help <command>' for a "
    "command's flags.\n";

// `code`, once what help or --version printed has reached stdout.
int Printed(int code, const Context* ctx) {
  std::cout.flush();
  const Status flushed = FlushStdout();
  if (flushed.ok()) return code;
  ctx->console.Error(flushed);
  return kExitEnvironment;
}

}  // namespace

int RunDtf(int argc, char** argv, Context* ctx) {
  std::unique_ptr<CLI::App> app = BuildApp(ctx);
  std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
  // dtf help --man [COMMAND], --man before or after the command.
  const auto man = std::find(args.begin(), args.end(), "--man");
  if (!args.empty() && args[0] == "help" && man != args.end()) {
    std::vector<std::string> words(args.begin() + 1, args.end());
    words.erase(words.begin() + (man - args.begin() - 1));
    StatusOr<std::string> binary = SelfExecutable();
    StatusOr<std::string> page =
        binary.ok() ? ManPageFor(app.get(), ManDirFor(*binary), words)
                    : StatusOr<std::string>(binary.status());
    const Status status = page.ok() ? ExecMan(*page) : page.status();
    ctx->console.Error(status);
    return ExitCodeFor(status);
  }
  args = RewriteHelp(args);
  if (const Status checked = CheckArgs(app.get(), args); !checked.ok()) {
    ctx->console.Error(checked);
    std::fputs(kUsageHint, stderr);
    return kExitBadInput;
  }
  // CLI11 takes the arguments last first.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app->parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    return Printed(app->exit(e), ctx);
  } catch (const CLI::CallForAllHelp& e) {
    return Printed(app->exit(e), ctx);
  } catch (const CLI::CallForVersion& e) {
    return Printed(app->exit(e), ctx);
  } catch (const CLI::ParseError& e) {
    if (args.empty()) {
      std::fputs(app->help().c_str(), stderr);
      return kExitBadInput;
    }
    ctx->console.Error(e.what());
    std::fputs(kUsageHint, stderr);
    return kExitBadInput;
  }
  // Whatever a command printed must have reached stdout.
  if (ctx->status.ok() && !ctx->exit_code) ctx->status = FlushStdout();
  if (!ctx->status.ok()) ctx->console.Error(ctx->status);
  if (ctx->exit_code) return *ctx->exit_code;
  return ExitCodeFor(ctx->status);
}

}  // namespace dtf::cli
