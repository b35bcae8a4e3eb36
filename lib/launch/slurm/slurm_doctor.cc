#include "lib/launch/slurm/slurm_doctor.h"

#include "lib/base/strings.h"
#include "lib/launch/slurm/slurm_cli.h"
#include "lib/launch/slurm/slurm_plan.h"
#include "lib/launch/slurm/slurm_query.h"

namespace dtf::launch {
namespace {

std::string Where(const Plan& plan, const std::string& key) {
  const auto& where = slurm::SlurmPartOf(plan).profile.where;
  const auto it = where.find(key);
  return it == where.end() ? plan.profile_source : it->second;
}

}  // namespace

std::vector<SlurmCheck> CheckSlurmPlan(const Plan& plan) {
  std::vector<SlurmCheck> out;
  const slurm::SlurmProfile& p = slurm::SlurmPartOf(plan).profile;
  StatusOr<slurm::CommandResult> sinfo =
      slurm::RunSlurmCommand({"sinfo", "-h", "-o", "%P|%l|%D|%a"});
  std::vector<slurm::SinfoPartition> parts;
  SlurmCheck info{"sinfo", false, ""};
  if (!sinfo.ok()) {
    info.detail = std::string(Message(sinfo.status()));
  } else if (!sinfo->ok()) {
    info.detail = sinfo->Describe("sinfo");
  } else {
    StatusOr<std::vector<slurm::SinfoPartition>> parsed =
        slurm::ParseSinfoPartitions(sinfo->out);
    if (!parsed.ok()) {
      info.detail = std::string(Message(parsed.status()));
    } else {
      parts = *parsed;
      info.ok = true;
      info.detail =
          StrCat(parts.size(), " partition", parts.size() == 1 ? "" : "s");
    }
  }
  out.push_back(info);
  SlurmCheck part{"partition", false, ""};
  const slurm::SinfoPartition* chosen = nullptr;
  for (const slurm::SinfoPartition& q : parts) {
    if (p.partition.empty() ? q.is_default : q.name == p.partition) {
      chosen = &q;
    }
  }
  if (!info.ok) {
    part.detail = "not checked (sinfo failed)";
  } else if (chosen == nullptr) {
    std::string names;
    for (const auto& q : parts)
      StrAppend(&names, names.empty() ? "" : ", ", q.name);
    part.detail =
        p.partition.empty()
            ? StrCat("Slurm has no default partition; set slurm.partition (",
                     names, ")")
            : StrCat(Where(plan, "slurm.partition"), ": slurm.partition = \"",
                     p.partition, "\": Slurm has no such partition (", names,
                     ")");
  } else if (!chosen->up) {
    part.detail = StrCat("partition ", chosen->name, " is not up");
  } else {
    part.ok = true;
    part.detail =
        StrCat(chosen->name, p.partition.empty() ? " (default)" : "", ": up, ",
               chosen->nodes, " node", chosen->nodes == 1 ? "" : "s");
  }
  out.push_back(part);
  SlurmCheck time{"time_limit", true, ""};
  if (p.time_limit.empty()) {
    time.detail = "the partition's";
  } else if (chosen != nullptr) {
    StatusOr<std::optional<int64_t>> want =
        slurm::SlurmTimeSeconds(p.time_limit);
    if (want.ok() && *want && chosen->max_seconds &&
        **want > *chosen->max_seconds) {
      time.ok = false;
      time.detail =
          StrCat(Where(plan, "slurm.time_limit"), ": slurm.time_limit = \"",
                 p.time_limit, "\" is above partition ", chosen->name,
                 "'s MaxTime (", *chosen->max_seconds / 60, " minutes)");
    } else if (want.ok() && !*want && chosen->max_seconds) {
      time.ok = false;
      time.detail = StrCat(Where(plan, "slurm.time_limit"),
                           ": slurm.time_limit = \"UNLIMITED\" but partition ",
                           chosen->name, " has a MaxTime");
    } else {
      time.detail = StrCat(p.time_limit, " fits partition ", chosen->name);
    }
  } else {
    time.detail = StrCat(p.time_limit, " (not checked: no partition)");
  }
  out.push_back(time);
  SlurmCheck nodes{"nodes", true, ""};
  if (p.nodes == 0) {
    nodes.detail = StrCat("as Slurm fits ", plan.ps + plan.workers, " tasks");
  } else if (chosen != nullptr && p.nodes > chosen->nodes) {
    nodes.ok = false;
    nodes.detail =
        StrCat(Where(plan, "slurm.nodes"), ": slurm.nodes = ", p.nodes,
               " but partition ", chosen->name, " has ", chosen->nodes);
  } else {
    nodes.detail = StrCat(
        p.nodes, " node", p.nodes == 1 ? "" : "s",
        chosen == nullptr
            ? std::string(" (not checked: no partition)")
            : StrCat(" of partition ", chosen->name, "'s ", chosen->nodes));
  }
  out.push_back(nodes);
  out.push_back(RunsDirCheck(
      plan,
      "whether every node sees it at the same path (shared storage) cannot "
      "be checked from one node"));
  return out;
}

}  // namespace dtf::launch
