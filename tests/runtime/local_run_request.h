// What the real-run tests of the runtime launch: a job as `dtf serve`
// processes (the build's dtf, DTF_BINARY) on the local backend.
#pragma once

#include <string>
#include <utility>

#include "lib/base/status.h"
#include "lib/launch/plan.h"
#include "lib/launch/profile.h"
#include "tests/testing/paths.h"

namespace dtf::testing {

// A request to run `job` with DTF_BINARY on the local backend, its run
// directories under `runs_dir`, from `profile` (a local profile's text).
inline StatusOr<launch::PlanRequest> LocalRunRequest(
    const std::string& job, const std::string& runs_dir,
    const std::string& profile) {
  DTF_ASSIGN_OR_RETURN(launch::Profile parsed,
                       launch::ParseProfile(profile, "test profile", "local"));
  launch::PlanRequest request;
  request.job = job;
  request.binary = DTF_BINARY;
  request.runs_dir = runs_dir;
  request.profile = std::move(parsed);
  return request;
}

}  // namespace dtf::testing
