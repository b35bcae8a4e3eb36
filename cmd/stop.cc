// dtf stop: stop every task of a run by its recorded process groups.
#include <cerrno>
#include <cstdio>
#include <memory>
#include <string>

#include "cmd/app.h"
#include "cmd/cli_output.h"
#include "cmd/flags.h"
#include "cmd/run_common.h"
#include "lib/base/strings.h"
#include "lib/data/json.h"
#include "lib/launch/hand_off.h"
#include "lib/launch/run_control.h"
#include "lib/launch/run_registry.h"

namespace dtf::cli {
namespace {

struct StopFlags {
  RunsFlags runs;
  std::string run;
  double grace = 10;
  bool json = false;
};

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names)
    StrAppend(&out, out.empty() ? "" : ", ", n);
  return out;
}

// An error naming the tasks StopRun left alone for want of a start time.
Status Unverifiable(const std::string& dir, const launch::StopReport& report) {
  if (report.unverifiable.empty()) return OkStatus();
  return FailedPreconditionError(StrCat(
      dir, "/tasks.json: ", JoinNames(report.unverifiable),
      report.unverifiable.size() == 1 ? " has" : " have",
      " a pid but no start time, so the process cannot be told from another "
      "that has that pid now: not signalled (stop it by hand if it is still "
      "the run's)"));
}

Status RunStop(const StopFlags& f) {
  DTF_ASSIGN_OR_RETURN(const std::string dir, FindRun(f.runs, f.run));
  if (auto engine =
          launch::QueryHandedOffRun(dir, launch::EngineQuery::kStop)) {
    return *engine;
  }
  DTF_ASSIGN_OR_RETURN(
      const launch::StopReport report,
      launch::StopRun(dir, std::chrono::milliseconds(
                               static_cast<int64_t>(f.grace * 1000))));
  DTF_ASSIGN_OR_RETURN(const launch::RunRecord record,
                       launch::ReadRunRecord(dir));
  if (f.json) {
    auto list = [](const std::vector<std::string>& names) {
      std::string out = "[";
      for (const std::string& n : names) {
        if (out.size() > 1) out += ", ";
        AppendJsonString(n, &out);
      }
      return out + "]";
    };
    std::string out = "{\"run\": ";
    AppendJsonString(record.run_id, &out);
    StrAppend(&out, ", \"state\": ");
    AppendJsonString(launch::RunStateName(record.state), &out);
    StrAppend(&out, ", \"stopped\": ", list(report.signalled),
              ", \"killed\": ", list(report.killed),
              ", \"unverifiable\": ", list(report.unverifiable), "}\n");
    DTF_RETURN_IF_ERROR(PrintStdout(out));
    return Unverifiable(dir, report);
  }
  std::string out;
  if (report.signalled.empty()) {
    out = StrCat("run ", record.run_id, ": nothing was running (",
                 launch::RunStateName(record.state), ")\n");
  } else {
    out = StrCat("run ", record.run_id, ": stopped ",
                 JoinNames(report.signalled));
    if (!report.killed.empty()) {
      StrAppend(&out, " (killed after ", f.grace,
                " s: ", JoinNames(report.killed), ")");
    }
    StrAppend(&out, "; state ", launch::RunStateName(record.state), "\n");
  }
  DTF_RETURN_IF_ERROR(PrintStdout(out));
  return Unverifiable(dir, report);
}

}  // namespace

void SetupStop(CLI::App* app, Context* ctx) {
  auto f = std::make_shared<StopFlags>();
  CLI::App* sub = app->add_subcommand(
      "stop",
      "Stop every task of a run (SIGTERM to each process group, SIGKILL "
      "after a grace period); stopping a stopped run does nothing");
  sub->add_option("run", f->run,
                  "The run id, or a unique prefix (default: the latest run)");
  AddRunsFlags(sub, &f->runs);
  sub->add_option("--grace", f->grace,
                  "Seconds tasks get to exit after SIGTERM before SIGKILL "
                  "(default 10)")
      ->check(NumberBetween(0, 3600));
  sub->add_flag("--json", f->json,
                "Print {\"run\", \"state\", \"stopped\": [tasks], \"killed\": "
                "[tasks]} as JSON");
  sub->callback([f, ctx] { ctx->status = RunStop(*f); });
}

}  // namespace dtf::cli
