// `dtf doctor` for a Slurm profile: what can be checked from the machine
// that submits (Slurm answers, the partition is there and up, the profile's
// limits fit it, the runs directory is writable).
#pragma once

#include <string>
#include <vector>

#include "lib/launch/backend_checks.h"
#include "lib/launch/plan.h"

namespace dtf::launch {

// "sinfo", "partition", "time_limit", "nodes", "run_dir".
using SlurmCheck = BackendCheck;

// One row per check, in a fixed order. Whether the runs directory is on
// storage every node shares cannot be told from one node: its row says so.
std::vector<SlurmCheck> CheckSlurmPlan(const Plan& plan);

}  // namespace dtf::launch
