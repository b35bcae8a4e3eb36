// What reading a profile and MakePlan ask of the Slurm backend: the
// profile's [slurm] table (lib/launch/slurm/slurm_profile.h) and its keys;
// then (lib/launch/plan_hooks.h) restarts in parameter-server runs only
// (a failed task started again alone in a job step of its own), the runs
// directory
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
#include "lib/launch/slurm/slurm_profile.h"

namespace dtf::launch::slurm {

// What a Slurm plan holds of its own (Plan::part): the profile's [slurm]
// table and the batch script the run is submitted with (written to <run
// dir>/sbatch.sh). Every task runs the script's `dtf task slurm` command;
// its host and port are known once Slurm places it (its ready file), so
// the plan has "" and 0.
struct SlurmPlanPart {
  SlurmProfile profile;
  std::string batch_script;
};

// The Slurm part of `plan`; an empty one for a plan of another backend.
const SlurmPlanPart& SlurmPartOf(const Plan& plan);

class SlurmProfileTable : public ProfileTable {
 public:
  // The keys a Slurm profile has, and its [slurm] table (a relative
  // run_dir is relative to the profile's directory).
  Status Read(const toml_util::Reader& reader, const toml_util::Table& table,
              Profile* profile) const override;
};

class SlurmPlanHooks : public PlanHooks {
 public:
  // Nothing to refuse: max_restarts is checked by PlaceTasks.
  Status CheckProfile(const Profile& profile) const override;
  // slurm.run_dir.
  std::string RunsDir(const Profile& profile) const override;
  // The batch script and every task's srun command. FailedPrecondition
  // naming the key for max_restarts > 0 in an allreduce plan.
  StatusOr<Plan> PlaceTasks(const PlanRequest& request,
                            Plan plan) const override;

  // What the shared code asks of a Slurm plan (slurm_plan_record.cc): the
  // tasks run on the allocation's nodes, their files on shared storage;
  // certificates name their tasks; the traffic crosses the cluster's
  // network; addresses are known once the tasks are placed.
  bool TasksHere() const override;
  // False: an allreduce run under Slurm restarts no rank.
  bool ResizesAllreduce() const override { return false; }
  std::string TlsNameOf(const Plan& plan, const TaskPlan& task) const override;
  bool CrossesNetwork(const Plan& plan) const override;
  bool AddressesPlanned() const override;
  // The nodes Slurm allocates, the shared storage the TLS files are on,
  // "(slurm)" for an address, and the batch script before the commands.
  std::string PlacementText(const Plan& plan) const override;
  std::string TlsNote(const Plan& plan) const override;
  std::string TlsOffText(const Plan& plan) const override;
  std::string AddressText(const TaskPlan& task) const override;
  std::string TableNote(const Plan& plan) const override;
  std::string CommandsText(const Plan& plan) const override;
  // The [slurm] table and the batch script.
  void WriteJson(const Plan& plan, nlohmann::ordered_json* j) const override;
  void ReadJson(const nlohmann::ordered_json& j, Plan* plan) const override;
};

}  // namespace dtf::launch::slurm
