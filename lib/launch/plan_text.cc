// The plan for people: PlanToText.
#include <algorithm>

#include "lib/base/strings.h"
#include "lib/launch/plan.h"

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

std::string PlanToText(const Plan& plan) {
  std::string out;
  StrAppend(&out, "job:      ", plan.job, "\n");
  StrAppend(&out, "profile:  ", plan.profile_name, " (", plan.profile_source,
            ")\n");
  StrAppend(
      &out, "backend:  ", BackendName(plan.backend), ", ", plan.ps, " ps, ",
      plan.workers, plan.workers == 1 ? " worker" : " workers", " on ",
      plan.on_slurm() ? std::string("the nodes Slurm allocates")
      : plan.remote()
          ? StrCat(
                plan.hosts.size(), plan.hosts.size() == 1 ? " host" : " hosts",
                plan.hostfile.empty() ? "" : StrCat(" (", plan.hostfile, ")"))
          : plan.host,
      ", ",
      plan.on_slurm()
          ? StrCat("port ", plan.base_port, " + the task's place on its node")
      : plan.base_port == 0
          ? std::string("ports chosen at launch")
          : StrCat("ports ", plan.base_port, "-",
                   plan.base_port + plan.ps + plan.workers - 1),
      "\n");
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
            plan.remote() ? "; copied to each host's run directory" : "",
            ")\n");
  if (plan.tls) {
    StrAppend(
        &out, "tls:      mutual TLS with the run's own CA: ", plan.run_dir,
        "/tls (the CA key stays there",
        plan.remote()     ? "; each host gets the CA certificate and its "
                            "tasks' certificates and keys"
        : plan.on_slurm() ? ", on the shared storage every node reads; each "
                            "certificate names its task, which its peers check"
                          : "",
        ")\n");
  } else if (plan.on_slurm()) {
    StrAppend(&out,
              "tls:      off (tls = false): the run's secret and every "
              "tensor cross the cluster's network in plaintext\n");
  } else {
    StrAppend(&out, "tls:      off",
              plan.LeavesLoopback()
                  ? " (tls = false): the run's secret and every tensor cross "
                    "the network in plaintext"
                  : " (every task on loopback)",
              "\n");
  }
  if (plan.remote()) {
    StrAppend(&out, "ships:    runtime ", plan.env_id, " and job ", plan.job_id,
              plan.with_data ? " (with its data)" : "", " to each host's ",
              plan.work_dir, "\n");
  }
  if (plan.resume) {
    StrAppend(&out, "resume:   every task restores run ", plan.run_id,
              "'s last checkpoint (--restore)\n");
  }
  if (plan.max_restarts > 0) {
    StrAppend(&out, "restarts: up to ", plan.max_restarts,
              " per failed parameter server or worker (not the chief)\n");
  }
  out += "\n";
  size_t name_width = 4, address_width = 7;
  const auto address = [&](const TaskPlan& t) {
    return plan.on_slurm() ? std::string("(slurm)") : t.address();
  };
  for (const TaskPlan& t : plan.tasks) {
    name_width = std::max(name_width, t.name().size());
    address_width = std::max(address_width, address(t).size());
  }
  StrAppend(&out, PadRight("TASK", name_width), "  ",
            PadRight("ADDRESS", address_width), "  ROLE    LOGS\n");
  for (const TaskPlan& t : plan.tasks) {
    StrAppend(
        &out, PadRight(t.name(), name_width), "  ",
        PadRight(address(t), address_width), "  ",
        PadRight(t.chief ? std::string("chief") : std::string(RoleName(t.role)),
                 6),
        "  ", plan.remote() ? StrCat(t.host, ":") : "", t.dir,
        "/{stdout,stderr}\n");
  }
  if (plan.on_slurm()) {
    out += "(host and port: where Slurm places the task, in its ready file)\n";
  } else if (plan.base_port == 0) {
    out += "(port 0: a free port chosen at launch)\n";
  }
  if (plan.on_slurm()) {
    // Every task runs the same command: the batch script's srun (in a
    // batch plan, it runs each task's own command, below).
    StrAppend(&out, "\nbatch script (", plan.run_dir,
              "/sbatch.sh; submitted with sbatch, or run with srun inside an "
              "allocation):\n",
              plan.batch_script);
    if (!plan.batch) return out;
  }
  for (const TaskPlan& t : plan.tasks) {
    StrAppend(&out, "\n", t.name(), ":\n");
    for (const auto& [name, value] : t.env) {
      StrAppend(&out, "  ", name, "=", ShellQuote(value), " \\\n");
    }
    out += CommandText(t.argv);
  }
  return out;
}

}  // namespace dtf::launch
