// What reading a profile and MakePlan ask of the Spark backend: the
// profile's [spark] table (lib/launch/spark/spark_profile.h) and its keys;
// then (lib/launch/plan_hooks.h) no restarts (a failed task fails the
// barrier stage, which is not retried), the runs directory from
// spark.run_dir, and tasks placed by Spark: every task runs the driver's
// `dtf task spark` command (lib/launch/spark/spark_driver.h), its host and
// port known once it is ready. TLS is on unless the profile turns it off,
// with certificates that name their tasks.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/plan.h"
#include "lib/launch/plan_hooks.h"
#include "lib/launch/profile.h"
#include "lib/launch/spark/spark_profile.h"

namespace dtf::launch::spark {

// What a Spark plan holds of its own (Plan::part): the profile's [spark]
// table, the spark-submit command line and the driver program (written to
// <run dir>/driver.py).
struct SparkPlanPart {
  SparkProfile profile;
  std::vector<std::string> submit;
  std::string driver;
  // The archives shipped with --archives (local path, alias); empty with
  // spark.ship = false.
  std::vector<std::pair<std::string, std::string>> archives;
};

// The Spark part of `plan`; an empty one for a plan of another backend.
const SparkPlanPart& SparkPartOf(const Plan& plan);

// Where the archives a plan ships are packed: the request's
// batch_files.pack_dir when set (a batch job packs into the working
// directory's .dtf/pack), else the job directory's .dtf/pack.
std::string PackDir(const PlanRequest& request);
// The runtime and job archives a plan ships, there, named by their ids
// (the placeholders in a dry run).
std::string EnvArchivePath(const PlanRequest& request);
std::string JobArchivePath(const PlanRequest& request);

class SparkProfileTable : public ProfileTable {
 public:
  Status Read(const toml_util::Reader& reader, const toml_util::Table& table,
              Profile* profile) const override;
};

class SparkPlanHooks : public PlanHooks {
 public:
  // FailedPrecondition for max_restarts > 0, naming the key.
  Status CheckProfile(const Profile& profile) const override;
  // spark.run_dir.
  std::string RunsDir(const Profile& profile) const override;
  // The driver, spark-submit's command and every task's command.
  StatusOr<Plan> PlaceTasks(const PlanRequest& request,
                            Plan plan) const override;

  // What the shared code asks of a Spark plan (spark_plan_record.cc).
  bool TasksHere() const override;
  // False: a Spark barrier stage restarts no task.
  bool ResizesAllreduce() const override { return false; }
  std::string TlsNameOf(const Plan& plan, const TaskPlan& task) const override;
  bool CrossesNetwork(const Plan& plan) const override;
  bool AddressesPlanned() const override;
  std::string PlacementText(const Plan& plan) const override;
  std::string TlsNote(const Plan& plan) const override;
  std::string TlsOffText(const Plan& plan) const override;
  std::string AddressText(const TaskPlan& task) const override;
  std::string TableNote(const Plan& plan) const override;
  std::string CommandsText(const Plan& plan) const override;
  void WriteJson(const Plan& plan, nlohmann::ordered_json* j) const override;
  void ReadJson(const nlohmann::ordered_json& j, Plan* plan) const override;
};

}  // namespace dtf::launch::spark
