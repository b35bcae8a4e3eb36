// The Spark application of a dtf run: the spark-submit command line and
// the Python driver it submits (written to <run dir>/driver.py).
//
// The driver waits (up to spark.slot_wait seconds) until the cluster has
// given the application one executor per task, then runs one barrier stage
// of ps + workers partitions (one task per executor: spark.task.cpus is the
// executor's cores). Each barrier task picks a free port on its executor,
// gathers every task's "host:port" (BarrierTaskContext.allGather, partition
// order) and runs `dtf task spark` (lib/launch/spark/spark_task.h) with
// them, in a process that gets SIGTERM when the Python worker running it
// dies (PR_SET_PDEATHSIG), so a task Spark kills takes its dtf serve with
// it. A task that ends non-zero fails the stage, which Spark does not
// retry (spark.stage.maxConsecutiveAttempts = 1): the driver exits 1.
// Too few executors: the driver says so and exits 3, never waits for
// ever (spark.scheduler.barrier.maxConcurrentTasksCheck.* bound Spark's
// own check too). Its own lines on stderr start with "dtf-spark: ".
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "lib/launch/spark/spark_profile.h"
#include "lib/launch/spark/spark_task.h"

namespace dtf::launch::spark {

inline constexpr char kDriverFile[] = "driver.py";
inline constexpr char kSubmitStdout[] = "spark-submit.out";
inline constexpr char kSubmitStderr[] = "spark-submit.err";
// What the driver's own lines start with.
inline constexpr char kDriverPrefix[] = "dtf-spark: ";
// The names the shipped archives are unpacked under on each executor.
inline constexpr char kEnvAlias[] = "dtf-env";
inline constexpr char kJobAlias[] = "dtf-job";

// What the application is made of beyond the profile.
struct SparkApp {
  std::string run_id;
  std::string run_dir;
  // Every task's `dtf task spark` (SparkTaskArgv). With `archives`, its
  // binary and --job are relative to the executor's working directory,
  // where Spark unpacks them.
  SparkTaskSpec spec;
  // (local path, alias) of each archive shipped with --archives.
  std::vector<std::pair<std::string, std::string>> archives;
  // The profile's [env], for every executor (spark.executorEnv.*).
  std::vector<std::pair<std::string, std::string>> env;
};

// spark-submit's command line for `app` on the cluster `profile` names.
std::vector<std::string> SparkSubmitArgv(const SparkProfile& profile,
                                         const SparkApp& app);

// The driver program (Python) of `app`.
std::string SparkDriverText(const SparkProfile& profile, const SparkApp& app);

}  // namespace dtf::launch::spark
