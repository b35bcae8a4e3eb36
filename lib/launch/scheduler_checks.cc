#include "lib/launch/scheduler_checks.h"

#include "lib/launch/slurm/slurm_doctor.h"
#include "lib/launch/spark/spark_doctor.h"

namespace dtf::launch {

std::optional<SchedulerChecks> CheckScheduler(const Plan& plan) {
  switch (plan.backend) {
    case BackendKind::kSlurm:
      return SchedulerChecks{"Slurm", CheckSlurmPlan(plan)};
    case BackendKind::kSpark:
      return SchedulerChecks{"Spark", spark::CheckSparkPlan(plan)};
    case BackendKind::kLocal:
    case BackendKind::kSsh:
    case BackendKind::kKubernetes:
      break;
  }
  return std::nullopt;
}

}  // namespace dtf::launch
