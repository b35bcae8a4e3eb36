#include "lib/launch/slurm/slurm_env.h"

#include <charconv>
#include <cstdint>
#include <initializer_list>
#include <utility>

#include "lib/base/strings.h"
#include "lib/launch/slurm/hostlist.h"

namespace dtf::launch::slurm {
namespace {

Status EnvError(std::string_view name, std::string_view value,
                std::string_view what) {
  return InvalidArgumentError(
      StrCat(name, "=", QuoteForMessage(value), ": ", what));
}

// A decimal integer in [min, max], the whole of `text`.
bool ParseEnvInt(std::string_view text, int64_t min, int64_t max, int* out) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || p != end || v < min || v > max) {
    return false;
  }
  *out = static_cast<int>(v);
  return true;
}

// The value of the first of `names` that is set; *used names it.
const std::string* FindEnv(const Environment& env,
                           std::initializer_list<std::string_view> names,
                           std::string_view* used) {
  for (std::string_view name : names) {
    auto it = env.find(name);
    if (it != env.end()) {
      *used = name;
      return &it->second;
    }
  }
  return nullptr;
}

Status ReadEnvInt(const Environment& env,
                  std::initializer_list<std::string_view> names, int64_t min,
                  int* out) {
  std::string_view name;
  const std::string* value = FindEnv(env, names, &name);
  if (value == nullptr) {
    return InvalidArgumentError(
        StrCat(*names.begin(), ": not set (is this an srun task?)"));
  }
  if (!ParseEnvInt(*value, min, 1000000, out)) {
    return EnvError(name, *value,
                    StrCat("expected an integer from ", min, " to 1000000"));
  }
  return OkStatus();
}

}  // namespace

StatusOr<std::vector<int>> ExpandTasksPerNode(std::string_view text,
                                              std::string_view variable) {
  std::vector<int> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view item = text.substr(pos, end - pos);
    std::string_view count = item;
    int repeat = 1;
    const size_t paren = item.find('(');
    if (paren != std::string_view::npos) {
      count = item.substr(0, paren);
      const std::string_view rest = item.substr(paren);
      if (rest.size() < 4 || !rest.starts_with("(x") || !rest.ends_with(")") ||
          !ParseEnvInt(rest.substr(2, rest.size() - 3), 1, 1000000, &repeat)) {
        return EnvError(variable, text,
                        StrCat("expected N or N(xM) at \"", item, "\""));
      }
    }
    int n = 0;
    if (!ParseEnvInt(count, 1, 1000000, &n)) {
      return EnvError(variable, text,
                      StrCat("expected a task count at \"", item, "\""));
    }
    if (out.size() + static_cast<size_t>(repeat) > kMaxHostlistHosts) {
      return EnvError(variable, text, "more nodes than a host list may have");
    }
    out.insert(out.end(), static_cast<size_t>(repeat), n);
    pos = end + 1;
  }
  return out;
}

StatusOr<SlurmStep> ReadSlurmStep(const Environment& env) {
  SlurmStep step;
  DTF_RETURN_IF_ERROR(ReadEnvInt(env, {"SLURM_PROCID"}, 0, &step.procid));
  DTF_RETURN_IF_ERROR(
      ReadEnvInt(env, {"SLURM_NTASKS", "SLURM_NPROCS"}, 1, &step.ntasks));
  DTF_RETURN_IF_ERROR(ReadEnvInt(env, {"SLURM_LOCALID"}, 0, &step.localid));
  std::string_view nodes_var;
  const std::string* nodes = FindEnv(
      env, {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"},
      &nodes_var);
  if (nodes == nullptr) {
    return InvalidArgumentError("SLURM_STEP_NODELIST: not set");
  }
  StatusOr<std::vector<std::string>> hosts = ExpandHostlist(*nodes);
  if (!hosts.ok()) {
    return InvalidArgumentError(
        StrCat(nodes_var, ": ", Message(hosts.status())));
  }
  if (hosts->empty()) return EnvError(nodes_var, *nodes, "no nodes");
  step.nodes = *std::move(hosts);
  std::string_view tpn_var;
  const std::string* tpn = FindEnv(
      env, {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}, &tpn_var);
  if (tpn == nullptr) {
    return InvalidArgumentError("SLURM_STEP_TASKS_PER_NODE: not set");
  }
  DTF_ASSIGN_OR_RETURN(step.tasks_per_node, ExpandTasksPerNode(*tpn, tpn_var));
  if (step.tasks_per_node.size() != step.nodes.size()) {
    return EnvError(
        tpn_var, *tpn,
        StrCat("counts tasks on ", step.tasks_per_node.size(), " nodes, but ",
               nodes_var, "=", QuoteForMessage(*nodes), " has ",
               step.nodes.size()));
  }
  int64_t total = 0;
  for (int n : step.tasks_per_node) total += n;
  if (total != step.ntasks) {
    return EnvError(
        tpn_var, *tpn,
        StrCat("sums to ", total, " tasks, but SLURM_NTASKS is ", step.ntasks));
  }
  if (step.procid >= step.ntasks) {
    return EnvError("SLURM_PROCID", std::to_string(step.procid),
                    StrCat("not below SLURM_NTASKS=", step.ntasks));
  }
  if (auto it = env.find("SLURMD_NODENAME"); it != env.end()) {
    step.node_name = it->second;
  }
  if (auto it = env.find("SLURM_JOB_ID"); it != env.end()) {
    step.job_id = it->second;
  }
  if (auto it = env.find("SLURM_STEP_ID"); it != env.end()) {
    step.step_id = it->second;
  }
  // Where the block distribution puts this task must be where it runs.
  int first = 0;
  for (size_t node = 0; node < step.nodes.size(); ++node) {
    const int count = step.tasks_per_node[node];
    if (step.procid < first + count) {
      const int local = step.procid - first;
      if (!step.node_name.empty() && step.node_name != step.nodes[node]) {
        return EnvError(
            "SLURMD_NODENAME", step.node_name,
            StrCat("task ", step.procid,
                   " runs here, but the "
                   "block distribution of ",
                   tpn_var, "=", QuoteForMessage(*tpn), " puts it on ",
                   step.nodes[node], " (run srun with --distribution=block)"));
      }
      if (local != step.localid) {
        return EnvError("SLURM_LOCALID", std::to_string(step.localid),
                        StrCat("task ", step.procid, " is local task ", local,
                               " of ", step.nodes[node],
                               " in the block "
                               "distribution (run srun with "
                               "--distribution=block)"));
      }
      break;
    }
    first += count;
  }
  return step;
}

std::string SlurmLayout::Addresses(Role role) const {
  std::string out;
  for (const SlurmTaskSlot& t : tasks) {
    if (t.role != role) continue;
    StrAppend(&out, out.empty() ? "" : ",", t.address());
  }
  return out;
}

StatusOr<SlurmLayout> LayoutSlurmTasks(const SlurmStep& step,
                                       const SlurmLayoutOptions& options) {
  if (options.ps < 0 || options.workers < 1) {
    return InvalidArgumentError(StrCat("slurm layout: ", options.ps,
                                       " parameter servers and ",
                                       options.workers, " workers"));
  }
  if (step.ntasks != options.ps + options.workers) {
    return EnvError(
        "SLURM_NTASKS", std::to_string(step.ntasks),
        StrCat("the run has ", options.ps, " parameter servers and ",
               options.workers, " workers (", options.ps + options.workers,
               " tasks)"));
  }
  if (options.base_port < 1 || options.base_port > 65535) {
    return InvalidArgumentError(StrCat(
        "slurm.base_port: must be from 1 to 65535, got ", options.base_port));
  }
  if (options.gpus_per_node < 0) {
    return InvalidArgumentError(
        StrCat("slurm.gpus_per_node: must be at least 0, got ",
               options.gpus_per_node));
  }
  SlurmLayout layout;
  layout.self = step.procid;
  int id = 0;
  for (size_t node = 0; node < step.nodes.size(); ++node) {
    int workers_here = 0;
    for (int local = 0; local < step.tasks_per_node[node]; ++local, ++id) {
      SlurmTaskSlot t;
      t.role = id < options.ps ? Role::kPs : Role::kWorker;
      t.index = id < options.ps ? id : id - options.ps;
      t.host = step.nodes[node];
      t.node = static_cast<int>(node);
      t.local_rank = local;
      t.port = options.base_port + local;
      if (t.port > 65535) {
        return InvalidArgumentError(
            StrCat("slurm.base_port: ", options.base_port, " + ", local,
                   " (local task on ", t.host, ") runs past port 65535"));
      }
      if (t.role == Role::kWorker && options.gpus_per_node > 0) {
        t.gpu = workers_here % options.gpus_per_node;
      }
      if (t.role == Role::kWorker) ++workers_here;
      layout.tasks.push_back(std::move(t));
    }
  }
  return layout;
}

}  // namespace dtf::launch::slurm
