#include "lib/launch/slurm/slurm_task.h"

#include "lib/base/strings.h"
#include "lib/launch/run_layout.h"

namespace dtf::launch::slurm {
namespace {

// CUDA_VISIBLE_DEVICES split at commas; empty when unset.
std::vector<std::string> VisibleGpus(const Environment& env) {
  std::vector<std::string> out;
  auto it = env.find("CUDA_VISIBLE_DEVICES");
  if (it == env.end() || it->second.empty()) return out;
  size_t pos = 0;
  while (pos <= it->second.size()) {
    size_t end = it->second.find(',', pos);
    if (end == std::string::npos) end = it->second.size();
    out.push_back(it->second.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

// The CUDA_VISIBLE_DEVICES of task `t`, which has a GPU: the entry at its
// GPU index in the step's CUDA_VISIBLE_DEVICES, else the index itself.
StatusOr<std::string> SlurmTaskGpu(const SlurmRunSpec& spec,
                                   const Environment& env,
                                   const SlurmTaskSlot& t) {
  const std::vector<std::string> visible = VisibleGpus(env);
  if (visible.empty()) return std::to_string(*t.gpu);
  if (static_cast<int>(visible.size()) < spec.gpus_per_node) {
    return InvalidArgumentError(
        StrCat("CUDA_VISIBLE_DEVICES=",
               QuoteForMessage(env.find("CUDA_VISIBLE_DEVICES")->second), ": ",
               visible.size(), " GPUs visible on ", t.host,
               ", but slurm.gpus_per_node is ", spec.gpus_per_node));
  }
  return visible[static_cast<size_t>(*t.gpu)];
}

StatusOr<SlurmLayout> LayoutOfSpec(const SlurmRunSpec& spec,
                                   const Environment& env) {
  DTF_ASSIGN_OR_RETURN(const SlurmStep step, ReadSlurmStep(env));
  return LayoutSlurmTasks(step, {.ps = spec.ps,
                                 .workers = spec.workers,
                                 .base_port = spec.base_port,
                                 .gpus_per_node = spec.gpus_per_node});
}

// This task's slot and where its files go, the command left to the caller.
SlurmServeCommand SlurmTaskFiles(const SlurmRunSpec& spec,
                                 const SlurmLayout& layout) {
  SlurmServeCommand c;
  c.slot = layout.me();
  c.dir = StrCat(spec.run_dir, "/", TaskDirName(c.slot.role, c.slot.index));
  c.stdout_file = StrCat(c.dir, "/", kStdoutFile);
  c.stderr_file = StrCat(c.dir, "/", kStderrFile);
  return c;
}

}  // namespace

std::vector<std::string> SlurmTaskArgv(const SlurmRunSpec& spec) {
  std::vector<std::string> argv = {spec.binary,
                                   "task",
                                   "slurm",
                                   "--job",
                                   spec.job,
                                   "--run-dir",
                                   spec.run_dir,
                                   "--run-id",
                                   spec.run_id,
                                   "--ps",
                                   std::to_string(spec.ps),
                                   "--workers",
                                   std::to_string(spec.workers),
                                   "--threads",
                                   std::to_string(spec.threads),
                                   "--base-port",
                                   std::to_string(spec.base_port),
                                   "--gpus-per-node",
                                   std::to_string(spec.gpus_per_node)};
  for (const std::string& set : spec.sets) {
    argv.push_back("--set");
    argv.push_back(set);
  }
  if (spec.resume) argv.push_back("--restore");
  if (spec.tls) argv.push_back("--tls");
  if (spec.s3) argv.push_back("--s3");
  if (spec.batch) argv.push_back("--batch");
  if (spec.replace >= 0) {
    argv.push_back("--replace");
    argv.push_back(std::to_string(spec.replace));
  }
  if (!spec.metrics_out.empty()) {
    argv.push_back("--metrics-out");
    argv.push_back(spec.metrics_out);
  }
  return argv;
}

StatusOr<SlurmServeCommand> MakeSlurmServeCommand(const SlurmRunSpec& spec,
                                                  const Environment& env) {
  DTF_ASSIGN_OR_RETURN(const SlurmLayout layout, LayoutOfSpec(spec, env));
  SlurmServeCommand c = SlurmTaskFiles(spec, layout);
  const SlurmTaskSlot& t = c.slot;
  c.argv = {spec.binary,     "serve",
            "--job",         spec.job,
            "--role",        std::string(RoleName(t.role)),
            "--index",       std::to_string(t.index),
            "--ps",          layout.Addresses(Role::kPs),
            "--workers",     layout.Addresses(Role::kWorker),
            "--run-id",      spec.run_id,
            "--run-dir",     spec.run_dir,
            "--secret-file", StrCat(spec.run_dir, "/", kSecretFile),
            "--ready-file",  StrCat(c.dir, "/", kReadyFile),
            "--threads",     std::to_string(spec.threads)};
  for (const std::string& set : spec.sets) {
    c.argv.push_back("--set");
    c.argv.push_back(set);
  }
  if (spec.resume) c.argv.push_back("--restore");
  if (t.gpu) {
    DTF_ASSIGN_OR_RETURN(std::string device, SlurmTaskGpu(spec, env, t));
    c.argv.push_back("--set");
    c.argv.push_back("train.device=cuda");
    c.env.emplace_back("CUDA_VISIBLE_DEVICES", std::move(device));
  }
  if (t.role == Role::kWorker && t.index == 0 && !spec.metrics_out.empty()) {
    c.argv.push_back("--metrics-out");
    c.argv.push_back(spec.metrics_out);
  }
  if (spec.tls) {
    c.argv.push_back("--tls-dir");
    c.argv.push_back(StrCat(spec.run_dir, "/", kTlsDir));
    // Slurm places the tasks after the certificates are made: each names
    // its task, which the peers check.
    c.argv.push_back("--tls-task-names");
  }
  if (spec.s3) {
    c.argv.push_back("--s3-credentials");
    c.argv.push_back(StrCat(spec.run_dir, "/", kS3CredentialsFile));
  }
  return c;
}

StatusOr<SlurmServeCommand> MakeSlurmBatchCommand(
    const SlurmRunSpec& spec, const Environment& env,
    const std::vector<std::vector<std::string>>& commands) {
  if (spec.ps != 0) {
    return InvalidArgumentError(StrCat("a batch run has workers only, not ",
                                       spec.ps, " parameter servers"));
  }
  if (commands.size() != static_cast<size_t>(spec.workers)) {
    return InvalidArgumentError(StrCat("the plan of run ", spec.run_id, " has ",
                                       commands.size(), " task commands for ",
                                       spec.workers, " workers"));
  }
  DTF_ASSIGN_OR_RETURN(const SlurmLayout layout, LayoutOfSpec(spec, env));
  SlurmServeCommand c = SlurmTaskFiles(spec, layout);
  const SlurmTaskSlot& t = c.slot;
  c.argv = commands[static_cast<size_t>(t.index)];
  if (c.argv.empty()) {
    return InvalidArgumentError(StrCat("the plan of run ", spec.run_id,
                                       " gives ", t.name(), " no command"));
  }
  if (t.gpu) {
    DTF_ASSIGN_OR_RETURN(std::string device, SlurmTaskGpu(spec, env, t));
    c.env.emplace_back("CUDA_VISIBLE_DEVICES", std::move(device));
  }
  return c;
}

}  // namespace dtf::launch::slurm
