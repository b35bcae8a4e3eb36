// `dtf doctor` for a Spark profile: what can be checked from the machine
// that submits (spark-submit is there, a standalone master answers, the
// runs directory is writable).
#pragma once

#include <string>
#include <vector>

#include "lib/launch/backend_checks.h"
#include "lib/launch/plan.h"

namespace dtf::launch::spark {

// "spark_submit", "master", "run_dir".
using SparkCheck = BackendCheck;

// One row per check, in a fixed order. Whether the executors see the runs
// directory at the same path cannot be told from here: its row says so.
std::vector<SparkCheck> CheckSparkPlan(const Plan& plan);

}  // namespace dtf::launch::spark
