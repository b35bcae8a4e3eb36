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
  if (!spec.metrics_out.empty()) {
    argv.push_back("--metrics-out");
    argv.push_back(spec.metrics_out);
  }
  return argv;
}

StatusOr<SlurmServeCommand> MakeSlurmServeCommand(const SlurmRunSpec& spec,
                                                  const Environment& env) {
  DTF_ASSIGN_OR_RETURN(const SlurmStep step, ReadSlurmStep(env));
  DTF_ASSIGN_OR_RETURN(
      const SlurmLayout layout,
      LayoutSlurmTasks(step, {.ps = spec.ps,
                              .workers = spec.workers,
                              .base_port = spec.base_port,
                              .gpus_per_node = spec.gpus_per_node}));
  SlurmServeCommand c;
  c.slot = layout.me();
  const SlurmTaskSlot& t = c.slot;
  c.dir = StrCat(spec.run_dir, "/", TaskDirName(t.role, t.index));
  c.stdout_file = StrCat(c.dir, "/", kStdoutFile);
  c.stderr_file = StrCat(c.dir, "/", kStderrFile);
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
    const std::vector<std::string> visible = VisibleGpus(env);
    std::string device = std::to_string(*t.gpu);
    if (!visible.empty()) {
      if (static_cast<int>(visible.size()) < spec.gpus_per_node) {
        return InvalidArgumentError(
            StrCat("CUDA_VISIBLE_DEVICES=",
                   QuoteForMessage(env.find("CUDA_VISIBLE_DEVICES")->second),
                   ": ", visible.size(), " GPUs visible on ", t.host,
                   ", but slurm.gpus_per_node is ", spec.gpus_per_node));
      }
      device = visible[static_cast<size_t>(*t.gpu)];
    }
    c.argv.push_back("--set");
    c.argv.push_back("train.device=cuda");
    c.env.emplace_back("CUDA_VISIBLE_DEVICES", device);
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
  return c;
}

}  // namespace dtf::launch::slurm
