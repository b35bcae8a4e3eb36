// What the real-run tests of the runtime launch: a job as `dtf serve`
// processes (the build's dtf, DTF_BINARY) on the local backend.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "lib/base/status.h"
#include "lib/base/strings.h"
#include "lib/launch/local/local_backend.h"
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

// A local run carried out with a fault: its notes, and whether the fault
// came.
struct FaultedRun {
  std::unique_ptr<launch::LocalRun> run;
  std::string notes;
  bool faulted = false;
};

// Starts `request` on the local backend and polls it to its end, calling
// `fault` once `due()` holds (once); a run still going after `limit` is
// stopped as a hang. Expects it to start and to end well.
inline FaultedRun RunWithFault(
    const launch::PlanRequest& request, const std::function<bool()>& due,
    const std::function<void(launch::LocalRun&)>& fault,
    std::chrono::seconds limit = std::chrono::seconds(240)) {
  FaultedRun out;
  std::vector<std::string> notes;
  launch::RunOptions options;
  options.grace = std::chrono::seconds(5);
  options.on_note = [&](std::string_view n) { notes.emplace_back(n); };
  const auto start = std::chrono::steady_clock::now();
  StatusOr<std::unique_ptr<launch::LocalRun>> run =
      launch::LocalRun::Start(request, options);
  EXPECT_TRUE(run.ok()) << run.status();
  if (!run.ok()) return out;
  out.run = *std::move(run);
  launch::LocalRun& r = *out.run;
  while (!r.Poll()) {
    if (!out.faulted && due()) {
      fault(r);
      out.faulted = true;
    }
    if (std::chrono::steady_clock::now() - start > limit) {
      r.Stop(DeadlineExceededError("the run hangs"));
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (const std::string& n : notes) StrAppend(&out.notes, n, "\n");
  EXPECT_TRUE(r.outcome().status.ok()) << r.outcome().status << "\n"
                                       << out.notes;
  return out;
}

}  // namespace dtf::testing
