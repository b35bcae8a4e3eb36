// What `dtf doctor` checks of a plan whose tasks a scheduler places
// (Slurm, Spark): the backend's own checks, from its folder. Built into
// dtf_launch beside the factory (backends.cc), which alone picks a backend
// by its kind.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lib/launch/backend_checks.h"
#include "lib/launch/plan.h"

namespace dtf::launch {

struct SchedulerChecks {
  std::string scheduler;  // as the report names it: "Slurm", "Spark"
  std::vector<BackendCheck> checks;
};

// The checks of `plan`'s scheduler, one row each in a fixed order; nullopt
// for a backend whose tasks dtf places itself (local, SSH).
std::optional<SchedulerChecks> CheckScheduler(const Plan& plan);

}  // namespace dtf::launch
