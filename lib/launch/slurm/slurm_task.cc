#include "lib/launch/slurm/slurm_task.h"

#include "lib/base/strings.h"

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
  static_cast<DirTaskCommand&>(c) =
      DirTaskFiles(spec, TaskName{c.slot.role, c.slot.index}, c.slot.host);
  return c;
}

}  // namespace

std::vector<std::string> SlurmTaskArgv(const SlurmRunSpec& spec) {
  std::vector<std::string> replace;
  if (spec.replace >= 0) replace = {"--replace", std::to_string(spec.replace)};
  return DirTaskArgv(spec, "slurm",
                     {"--base-port", std::to_string(spec.base_port),
                      "--gpus-per-node", std::to_string(spec.gpus_per_node)},
                     replace);
}

StatusOr<SlurmServeCommand> MakeSlurmServeCommand(const SlurmRunSpec& spec,
                                                  const Environment& env) {
  DTF_ASSIGN_OR_RETURN(const SlurmLayout layout, LayoutOfSpec(spec, env));
  SlurmServeCommand c = SlurmTaskFiles(spec, layout);
  const SlurmTaskSlot& t = c.slot;
  c.argv = DirServeArgv(spec, c, layout.Addresses(Role::kPs),
                        layout.Addresses(Role::kWorker));
  if (t.gpu) {
    DTF_ASSIGN_OR_RETURN(std::string device, SlurmTaskGpu(spec, env, t));
    c.argv.push_back("--set");
    c.argv.push_back("train.device=cuda");
    c.env.emplace_back("CUDA_VISIBLE_DEVICES", std::move(device));
  }
  AppendServeTail(spec, c.task, &c.argv);
  return c;
}

StatusOr<SlurmServeCommand> MakeSlurmBatchCommand(
    const SlurmRunSpec& spec, const Environment& env,
    const std::vector<std::vector<std::string>>& commands) {
  if (spec.ps != 0) {
    return InvalidArgumentError(StrCat("a batch run has workers only, not ",
                                       spec.ps, " parameter servers"));
  }
  DTF_RETURN_IF_ERROR(CheckBatchCommands(spec, commands));
  DTF_ASSIGN_OR_RETURN(const SlurmLayout layout, LayoutOfSpec(spec, env));
  SlurmServeCommand c = SlurmTaskFiles(spec, layout);
  const SlurmTaskSlot& t = c.slot;
  DTF_ASSIGN_OR_RETURN(c.argv, DirBatchArgv(spec, c.task, commands));
  if (t.gpu) {
    DTF_ASSIGN_OR_RETURN(std::string device, SlurmTaskGpu(spec, env, t));
    c.env.emplace_back("CUDA_VISIBLE_DEVICES", std::move(device));
  }
  return c;
}

}  // namespace dtf::launch::slurm
