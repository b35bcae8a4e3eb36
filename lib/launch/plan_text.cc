// The plan for people: PlanToText.
#include <algorithm>

#include "lib/base/strings.h"
#include "lib/launch/plan.h"
#include "lib/launch/plan_hooks.h"

namespace dtf::launch {
namespace {

// The command line as shell words, one flag per line.
std::string CommandText(const std::vector<std::string>& argv) {
  std::string out = "  ";
  for (size_t i = 0; i < argv.size(); ++i) {
    const bool flag = argv[i].starts_with("--");
    if (i > 0) StrAppend(&out, flag ? " \\\n      " : " ");
    StrAppend(&out, ShellQuote(argv[i]));
  }
  return out + "\n";
}

}  // namespace

std::string TaskCommandsText(const Plan& plan) {
  std::string out;
  for (const TaskPlan& t : plan.tasks) {
    StrAppend(&out, "\n", t.name(), ":\n");
    for (const auto& [name, value] : t.env) {
      StrAppend(&out, "  ", name, "=", ShellQuote(value), " \\\n");
    }
    out += CommandText(t.argv);
  }
  return out;
}

std::string PlanToText(const Plan& plan) {
  const PlanHooks& hooks = plan.hooks();
  std::string out;
  StrAppend(&out, "job:      ", plan.job, "\n");
  StrAppend(&out, "profile:  ", plan.profile_name, " (", plan.profile_source,
            ")\n");
  const int workers = plan.StartedAtLaunch();
  StrAppend(&out, "backend:  ", BackendName(plan.backend), ", ", plan.ps,
            " ps, ", workers, workers == 1 ? " worker" : " workers",
            workers < plan.workers ? StrCat(" (up to ", plan.workers, ")") : "",
            " on ", hooks.PlacementText(plan), "\n");
  if (plan.allreduce()) {
    StrAppend(&out,
              "mode:     allreduce, no parameter servers: the workers "
              "average their gradients ",
              plan.cuda_workers ? "over NCCL, a GPU each"
                                : "over Gloo's TCP ring, on CPUs",
              "\n");
  }
  StrAppend(&out, "threads:  ",
            plan.threads == 0 ? std::string("each task decides")
                              : StrCat(plan.threads, " per task"),
            "\n");
  StrAppend(&out, "run:      ", plan.run_dir, "\n");
  StrAppend(&out, "secret:   ", plan.secret_file, " (mode 0600",
            hooks.SecretNote(plan), ")\n");
  if (!plan.s3_file.empty()) {
    std::string names;
    for (const std::string& v : plan.s3_variables) {
      StrAppend(&names, names.empty() ? "" : ", ", v);
    }
    StrAppend(&out, "s3:       ", plan.s3_file, " (mode 0600",
              hooks.SecretNote(plan), "): ", names, "\n");
  }
  if (plan.tls) {
    StrAppend(&out,
              "tls:      mutual TLS with the run's own CA: ", plan.run_dir,
              "/tls (the CA key stays there", hooks.TlsNote(plan), ")\n");
  } else {
    StrAppend(&out, "tls:      ", hooks.TlsOffText(plan), "\n");
  }
  out += hooks.MoreText(plan);
  if (plan.resume) {
    StrAppend(&out, "resume:   every task restores run ", plan.run_id,
              "'s last checkpoint (--restore)\n");
  }
  if (plan.max_restarts > 0) {
    StrAppend(&out, "restarts: up to ", plan.max_restarts,
              " per failed parameter server or worker (not the chief)\n");
  }
  if (plan.min_workers > 0) {
    StrAppend(&out, "elastic:  a lost worker is left out while ",
              plan.min_workers, " of ", plan.StartedAtLaunch(),
              " workers are left; below that it is restarted\n");
  }
  if (plan.launch_workers > 0) {
    StrAppend(
        &out, "scale:    ",
        plan.launch_workers + 1 == plan.workers
            ? StrCat("worker ", plan.launch_workers)
            : StrCat("workers ", plan.launch_workers, "-", plan.workers - 1),
        " reserved: started by `dtf scale ", plan.run_id,
        " --workers N` (N up to ", plan.workers,
        "), each taking a share of the input left\n");
  }
  out += "\n";
  size_t name_width = 4, address_width = 7;
  for (const TaskPlan& t : plan.tasks) {
    name_width = std::max(name_width, t.name().size());
    address_width = std::max(address_width, hooks.AddressText(t).size());
  }
  StrAppend(&out, PadRight("TASK", name_width), "  ",
            PadRight("ADDRESS", address_width), "  ROLE    LOGS\n");
  for (const TaskPlan& t : plan.tasks) {
    StrAppend(&out, PadRight(t.name(), name_width), "  ",
              PadRight(hooks.AddressText(t), address_width), "  ",
              PadRight(t.chief            ? std::string("chief")
                       : plan.Reserved(t) ? std::string("spare")
                                          : std::string(RoleName(t.role)),
                       6),
              "  ", hooks.LogsText(t), "/{stdout,stderr}\n");
  }
  out += hooks.TableNote(plan);
  out += hooks.CommandsText(plan);
  return out;
}

}  // namespace dtf::launch
