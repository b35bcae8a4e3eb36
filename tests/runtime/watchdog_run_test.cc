// Hangs detected in real runs: `dtf serve` processes under the local
// launcher, one of whose workers freezes its training thread (the chief's
// step-progress watchdog), and a run past the launcher's deadline.
#include <signal.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/launch/local/local_backend.h"
#include "lib/launch/profile.h"
#include "lib/launch/run_state.h"
#include "tests/runtime/local_run_request.h"
#include "tests/runtime/runtime_testing.h"
#include "tests/testing/paths.h"
#include "tests/testing/temp_dir.h"

namespace dtf::runtime {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Polls `run` until it is over; past `until` it is stopped with `why`.
void PollToEnd(launch::LocalRun& run, Clock::time_point until,
               const Status& why) {
  while (!run.Poll()) {
    if (Clock::now() > until) {
      run.Stop(why);
      break;
    }
    std::this_thread::sleep_for(50ms);
  }
}

// A real run: ps:0, worker:0 (the chief) and worker:1 as `dtf serve`
// processes under the local launcher; worker:1's training thread freezes
// after 20 steps (DTF_TEST_FREEZE_AT) while its heartbeats go on. The chief
// takes it for dead after stall_timeout, it exits, and the run finishes
// without it instead of waiting for it for ever.
TEST(WatchdogRunTest, AFrozenWorkerIsTakenForDeadAndTheRunFinishes) {
  dtf::testing::TempDir dir("dtf_watchdog_test");
  StatusOr<std::string> job = testing::WriteExampleJob(
      "titanic", dir,
      {{"log_every_steps = 10",
        "log_every_steps = 10\nheartbeat_timeout = 1\nstall_timeout = 3"}});
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(testing::LoadJobWithRecords(*job).ok());
  StatusOr<launch::PlanRequest> request = dtf::testing::LocalRunRequest(
      *job, dir.Join("runs"),
      "backend = \"local\"\nps = 1\nworkers = 2\nhost = \"127.0.0.1\"\n"
      "threads = 1\n[env]\nDTF_TEST_FREEZE_AT = \"worker:1@20\"\n");
  ASSERT_TRUE(request.ok()) << request.status();
  std::vector<std::string> notes;
  launch::RunOptions options;
  options.grace = 3s;
  options.on_note = [&](std::string_view n) { notes.emplace_back(n); };
  const auto start = Clock::now();
  StatusOr<std::unique_ptr<launch::LocalRun>> run =
      launch::LocalRun::Start(*request, options);
  ASSERT_TRUE(run.ok()) << run.status();
  PollToEnd(**run, start + 60s, DeadlineExceededError("the run hangs"));
  const launch::RunOutcome outcome = (*run)->outcome();
  const launch::Plan& plan = (*run)->plan();
  const std::string chief_err =
      dtf::testing::ReadFile(plan.chief().stderr_file);
  const std::string worker_err =
      dtf::testing::ReadFile(plan.tasks[2].stderr_file);
  std::string all_notes;
  for (const std::string& n : notes) StrAppend(&all_notes, n, "\n");
  EXPECT_TRUE(outcome.status.ok()) << outcome.status << "\n" << all_notes;
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_THAT(chief_err, HasSubstr("worker:1 has finished no step for"));
  EXPECT_THAT(chief_err, HasSubstr("(train.stall_timeout = 3 s); told it"));
  EXPECT_THAT(worker_err, HasSubstr("took this worker for dead"));
  // It exits on its own (status 1), frozen thread and all, rather than
  // being killed at the end.
  EXPECT_THAT(all_notes, HasSubstr("worker:1 exited with status 1"));
  EXPECT_LT(Clock::now() - start, 45s);
}

// A real run past its --deadline: every task is stopped, the chief writing
// its checkpoint first, and no process is left.
TEST(WatchdogRunTest, TheDeadlineStopsARealRunAndLeavesNoProcess) {
  dtf::testing::TempDir dir("dtf_deadline_test");
  StatusOr<std::string> job = testing::WriteExampleJob(
      "titanic", dir, {{"epochs = 20", "epochs = 100000"}});
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(testing::LoadJobWithRecords(*job).ok());
  StatusOr<launch::PlanRequest> request = dtf::testing::LocalRunRequest(
      *job, dir.Join("runs"),
      "backend = \"local\"\nps = 1\nworkers = 2\nhost = \"127.0.0.1\"\n"
      "threads = 1\n");
  ASSERT_TRUE(request.ok()) << request.status();
  launch::RunOptions options;
  options.grace = 5s;
  options.deadline = 4s;
  const auto start = Clock::now();
  StatusOr<std::unique_ptr<launch::LocalRun>> run =
      launch::LocalRun::Start(*request, options);
  ASSERT_TRUE(run.ok()) << run.status();
  PollToEnd(**run, start + 60s,
            InternalError("the deadline did not stop the run"));
  const launch::RunOutcome outcome = (*run)->outcome();
  EXPECT_EQ(outcome.status.code(), absl::StatusCode::kDeadlineExceeded)
      << outcome.status;
  EXPECT_THAT(Message(outcome.status),
              HasSubstr("the run's deadline (--deadline 4 s) passed"));
  EXPECT_EQ(launch::RunStateName(outcome.state), "failed");
  EXPECT_LT(Clock::now() - start, 20s);
  const std::string chief_err =
      dtf::testing::ReadFile((*run)->plan().chief().stderr_file);
  EXPECT_THAT(chief_err, HasSubstr("; checkpoint "));
  EXPECT_TRUE(std::filesystem::exists(dir.Join("out/checkpoint.dtf")));
  for (size_t i = 0; i < (*run)->plan().tasks.size(); ++i) {
    const pid_t pid = (*run)->process(i).pid;
    EXPECT_TRUE(::kill(pid, 0) != 0 && errno == ESRCH)
        << (*run)->plan().tasks[i].name() << " (pid " << pid << ") is left";
  }
}

}  // namespace
}  // namespace dtf::runtime
