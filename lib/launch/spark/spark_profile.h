// The [spark] table of a profile with backend = "spark" (docs/launch.md,
// "Spark"): the cluster a run's application is submitted to and how. Every
// error is InvalidArgument "<file>:<line>:<col>: <key>: what is wrong".
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/base/status.h"
#include "lib/launch/profile.h"

namespace dtf::toml_util {
class Reader;
struct Table;
}  // namespace dtf::toml_util

namespace dtf::launch::spark {

struct SparkProfile {
  // spark-submit's --master: "spark://host:7077" (standalone), "yarn", or
  // "local-cluster[...]". Required.
  std::string master;
  // spark-submit itself: a path, or a name looked up in PATH. Default
  // "spark-submit".
  std::string spark_submit = "spark-submit";
  // spark-submit's --deploy-mode. "client" (the default and the one dtf
  // supports: the driver runs beside dtf launch, which stops the run by
  // ending it).
  std::string deploy_mode = "client";
  // Cores of each executor; every task takes a whole executor
  // (spark.task.cpus = executor_cores), as TensorFlowOnSpark runs one task
  // per executor. Default 1.
  int executor_cores = 1;
  // spark.executor.memory, in Spark's format ("1g", "512m"). Default "1g".
  std::string executor_memory = "1g";
  // The Python that runs the driver and the executors' Python workers
  // (spark.pyspark.python and spark.pyspark.driver.python). Default
  // "python3".
  std::string python = "python3";
  // Seconds the driver waits for the cluster to give an executor to every
  // task before it fails the run (a barrier stage needs them all at once).
  // Default 60.
  int slot_wait = 60;
  // Ship the runtime and the job (dtf pack env / zip) with --archives.
  // Default true; false: every executor runs the launcher's dtf binary on
  // the launcher's job file, which must be at the same paths there.
  bool ship = true;
  // A directory the launcher and every executor see (shared storage)
  // holding the run directories; "" (the default): the job directory's
  // .dtf/runs, which must then be shared.
  std::string run_dir;
  // Extra --conf settings, by key, after dtf's own (a key dtf sets is
  // overridden).
  std::vector<std::pair<std::string, std::string>> conf;
  // "<file>:<line>:<col>" of each key read ("spark.master").
  std::map<std::string, std::string> where;
};

// Checks the top-level keys of a backend = "spark" profile: those of other
// backends (host, hosts, base_port, ...) are refused, naming the key to use
// instead where there is one.
Status CheckSparkProfileKeys(const toml_util::Reader& reader,
                             const toml_util::Table& profile);

// Reads the [spark] table of `profile` (required: it names the master); a
// relative run_dir is relative to `profile_dir`.
StatusOr<SparkProfile> ReadSparkProfile(const toml_util::Reader& reader,
                                        const toml_util::Table& profile,
                                        std::string_view profile_dir);

// The [spark] table of `profile` (Profile::table); the defaults for a
// profile of another backend.
const SparkProfile& SparkTableOf(const Profile& profile);
SparkProfile& MutableSparkTable(Profile* profile);

// The host and port of a standalone master ("spark://h:7077"); nullopt for
// any other master. Several masters ("spark://h1:7077,h2:7077") give the
// first.
std::optional<std::pair<std::string, int>> StandaloneMaster(
    std::string_view master);

}  // namespace dtf::launch::spark
