#include "lib/launch/slurm/batch_script.h"

#include <vector>

#include "lib/base/strings.h"

namespace dtf::launch::slurm {
namespace {

// "<file>:<line>:<col>: " of a [slurm] key, or "" when it was not written.
std::string BatchWhere(const SlurmProfile& profile, const std::string& key) {
  auto it = profile.where.find(key);
  return it == profile.where.end() ? "" : StrCat(it->second, ": ");
}

Status CheckSbatchPath(std::string_view what, const std::string& path) {
  if (path.find_first_of(" \t\n\r\"'\\") != std::string::npos) {
    return InvalidArgumentError(
        StrCat(what, " ", QuoteForMessage(path),
               ": an #SBATCH line cannot hold whitespace, quotes or "
               "backslashes"));
  }
  return OkStatus();
}

void Directive(std::string* out, std::string_view option,
               std::string_view value) {
  if (value.empty()) return;
  StrAppend(out, "#SBATCH --", option, "=", value, "\n");
}

}  // namespace

StatusOr<std::string> RenderBatchScript(const SlurmProfile& profile,
                                        const SlurmRunSpec& spec) {
  const int ntasks = spec.ps + spec.workers;
  if (spec.ps < 0 || spec.workers < 1) {
    return InvalidArgumentError(StrCat("slurm batch script: ", spec.ps,
                                       " parameter servers and ", spec.workers,
                                       " workers"));
  }
  if (profile.nodes > 0 && profile.tasks_per_node > 0 &&
      static_cast<int64_t>(profile.nodes) * profile.tasks_per_node < ntasks) {
    return InvalidArgumentError(StrCat(
        BatchWhere(profile, "slurm.tasks_per_node"), "slurm.tasks_per_node: ",
        profile.nodes, " nodes of ", profile.tasks_per_node,
        " tasks hold fewer than the run's ", ntasks, " (", spec.ps, " ps + ",
        spec.workers, " workers); raise slurm.nodes or slurm.tasks_per_node"));
  }
  DTF_RETURN_IF_ERROR(CheckSbatchPath("run directory", spec.run_dir));
  for (const std::string& arg : profile.sbatch_args) {
    if (arg.find_first_of("\n\r") != std::string::npos) {
      return InvalidArgumentError(StrCat(
          BatchWhere(profile, "slurm.sbatch_args"),
          "slurm.sbatch_args: ", QuoteForMessage(arg), ": holds a line break"));
    }
  }
  std::string out = "#!/bin/bash\n";
  Directive(&out, "job-name", StrCat("dtf-", spec.run_id));
  Directive(&out, "partition", profile.partition);
  Directive(&out, "account", profile.account);
  Directive(&out, "time", profile.time_limit);
  if (profile.nodes > 0)
    Directive(&out, "nodes", std::to_string(profile.nodes));
  Directive(&out, "ntasks", std::to_string(ntasks));
  if (profile.tasks_per_node > 0) {
    Directive(&out, "ntasks-per-node", std::to_string(profile.tasks_per_node));
  }
  if (profile.gpus_per_node > 0) {
    Directive(&out, "gpus-per-node", std::to_string(profile.gpus_per_node));
  }
  Directive(&out, "constraint", profile.constraint);
  Directive(&out, "output", StrCat(spec.run_dir, "/", kBatchStdout));
  Directive(&out, "error", StrCat(spec.run_dir, "/", kBatchStderr));
  for (const std::string& arg : profile.sbatch_args) {
    StrAppend(&out, "#SBATCH ", arg, "\n");
  }
  StrAppend(&out, "# dtf run ", spec.run_id, ": ");
  if (spec.ps > 0) {
    StrAppend(&out, spec.ps, " parameter server", spec.ps == 1 ? "" : "s",
              " (task ids 0-", spec.ps - 1, "), then ");
  }
  StrAppend(&out, spec.workers, " worker", spec.workers == 1 ? "" : "s",
            " (the first is the chief).\n");
  out += "set -eu\n";
  for (const auto& [name, value] : spec.env) {
    StrAppend(&out, "export ", name, "=", ShellQuote(value), "\n");
  }
  // The step is named as the job: how the launcher finds it when it runs
  // the script inside an allocation of its own.
  std::vector<std::string> words = {
      "srun",
      // With restarts, a failed task is started again alone (the
      // launcher's srun --overlap): the others go on.
      spec.restarts ? "--kill-on-bad-exit=0" : "--kill-on-bad-exit=1",
      "--distribution=block", StrCat("--ntasks=", ntasks),
      StrCat("--job-name=dtf-", spec.run_id)};
  if (profile.tasks_per_node > 0) {
    words.push_back(StrCat("--ntasks-per-node=", profile.tasks_per_node));
  }
  words.insert(words.end(), profile.srun_args.begin(), profile.srun_args.end());
  const std::vector<std::string> task = SlurmTaskArgv(spec);
  words.insert(words.end(), task.begin(), task.end());
  out += "exec";
  for (const std::string& w : words) StrAppend(&out, " \\\n  ", ShellQuote(w));
  out += "\n";
  return out;
}

}  // namespace dtf::launch::slurm
