// `dtf doctor` for a Slurm profile: what can be checked from the machine
// that submits (Slurm answers, the partition is there and up, the profile's
// limits fit it, the runs directory is writable).
#pragma once

#include <string>
#include <vector>

#include "lib/launch/plan.h"

namespace dtf::launch {

struct SlurmCheck {
  std::string check;  // "sinfo", "partition", "time_limit", "nodes", ...
  bool ok = false;
  std::string detail;
};

// One row per check, in a fixed order. Whether the runs directory is on
// storage every node shares cannot be told from one node: its row says so.
std::vector<SlurmCheck> CheckSlurmPlan(const Plan& plan);

// The rows as a table ("CHECK  OK  DETAIL").
std::string SlurmCheckTable(const std::vector<SlurmCheck>& checks);

}  // namespace dtf::launch
