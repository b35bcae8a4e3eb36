// The rows `dtf doctor` prints for a profile whose tasks a batch system
// places (Slurm, Spark): each a check that can be made from the machine
// that submits, and the checks those backends share.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lib/launch/plan.h"

namespace dtf::launch {

struct BackendCheck {
  std::string check;  // "sinfo", "master", "run_dir", ...
  bool ok = false;
  std::string detail;
};

// That the plan's runs directory can be made and written here. Whether the
// tasks see it at the same path (shared storage) cannot be told from here:
// the row says so, in `unchecked` ("whether every node sees it ...").
BackendCheck RunsDirCheck(const Plan& plan, std::string_view unchecked);

// The rows as a table ("CHECK  OK   DETAIL").
std::string BackendCheckTable(const std::vector<BackendCheck>& checks);

}  // namespace dtf::launch
