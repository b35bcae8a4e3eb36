#include "cmd/app.h"

#include "cmd/exit_code.h"
#include "lib/base/build_config.h"
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
      "Run 'dtf <command> --help' for a command's flags; 'man dtf' for the "
      "exit codes.");
  SetupGenRecords(app.get(), ctx);
  SetupInit(app.get(), ctx);
  SetupInspect(app.get(), ctx);
  SetupTrain(app.get(), ctx);
  SetupServe(app.get(), ctx);
  SetupPredict(app.get(), ctx);
  SetupLaunch(app.get(), ctx);
  SetupStatus(app.get(), ctx);
  SetupLogs(app.get(), ctx);
  SetupStop(app.get(), ctx);
  SetupPack(app.get(), ctx);
  SetupDoctor(app.get(), ctx);
  SetupHosts(app.get(), ctx);
  SetupTask(app.get(), ctx);
  return app;
}

int RunDtf(int argc, char** argv, Context* ctx) {
  std::unique_ptr<CLI::App> app = BuildApp(ctx);
  try {
    app->parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app->exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app->exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app->exit(e);
  } catch (const CLI::ParseError& e) {
    if (argc <= 1) {
      std::fputs(app->help().c_str(), stderr);
      return kExitBadInput;
    }
    ctx->console.Error(e.what());
    std::fprintf(stderr, "Run 'dtf --help' or 'dtf <command> --help'.\n");
    return kExitBadInput;
  }
  if (!ctx->status.ok()) ctx->console.Error(ctx->status);
  if (ctx->exit_code) return *ctx->exit_code;
  return ExitCodeFor(ctx->status);
}

}  // namespace dtf::cli
