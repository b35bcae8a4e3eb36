// `dtf doctor` for a Spark profile: what can be checked from the machine
// that submits (spark-submit is there, a standalone master answers, the
// runs directory is writable).
#pragma once

#include <string>
#include <vector>

#include "lib/launch/plan.h"

namespace dtf::launch::spark {

struct SparkCheck {
  std::string check;  // "spark_submit", "master", "run_dir"
  bool ok = false;
  std::string detail;
};

// One row per check, in a fixed order. Whether the executors see the runs
// directory at the same path cannot be told from here: its row says so.
std::vector<SparkCheck> CheckSparkPlan(const Plan& plan);

// The rows as a table ("CHECK  OK  DETAIL").
std::string SparkCheckTable(const std::vector<SparkCheck>& checks);

}  // namespace dtf::launch::spark
