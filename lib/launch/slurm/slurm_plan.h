// What reading a profile and MakePlan ask of the Slurm backend: the
// profile's [slurm] table (lib/launch/slurm/slurm_profile.h) and its keys;
// then (lib/launch/plan_hooks.h) no
// restarts (srun ends the job step when a task fails), the runs directory
// from slurm.run_dir, and tasks placed by Slurm, every one running the
// batch script's `dtf task slurm` command (lib/launch/slurm/batch_script.h)
// with its host and port known once it is ready. TLS is on unless the
// profile turns it off, with certificates that name their tasks.
#pragma once

#include <string>

#include "lib/base/status.h"
#include "lib/launch/plan.h"
#include "lib/launch/plan_hooks.h"
#include "lib/launch/profile.h"

namespace dtf::launch::slurm {

class SlurmProfileTable : public ProfileTable {
 public:
  // The keys a Slurm profile has, and its [slurm] table (a relative
  // run_dir is relative to the profile's directory).
  Status Read(const toml_util::Reader& reader, const toml_util::Table& table,
              Profile* profile) const override;
};

class SlurmPlanHooks : public PlanHooks {
 public:
  // FailedPrecondition for max_restarts > 0, naming the key.
  Status CheckProfile(const Profile& profile) const override;
  // slurm.run_dir.
  std::string RunsDir(const Profile& profile) const override;
  // The batch script and every task's srun command.
  StatusOr<Plan> PlaceTasks(const PlanRequest& request,
                            Plan plan) const override;
};

}  // namespace dtf::launch::slurm
