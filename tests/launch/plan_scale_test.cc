// The profile's max_workers (docs/launch.md, *Elastic workers*): worker
// slots planned at launch, those above `workers` reserved for dtf scale;
// and what dtf scale may ask of a run (lib/launch/run_scale.h).
#include <algorithm>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/launch/plan.h"
#include "lib/launch/plan_hooks.h"
#include "lib/launch/profile.h"
#include "lib/launch/run_scale.h"
#include "tests/testing/temp_dir.h"

namespace dtf::launch {
namespace {

using ::testing::HasSubstr;

PlanRequest ScaleRequest(int workers, int max_workers) {
  PlanRequest r;
  r.job = "/jobs/census/dtf.toml";
  r.binary = "/opt/dtf/bin/dtf";
  r.profile =
      *ParseProfile(StrCat("backend = \"local\"\nps = 1\nworkers = ", workers,
                           "\nmax_workers = ", max_workers,
                           "\nhost = \"127.0.0.1\"\nbase_port = 7000\n"),
                    "/jobs/census/profiles/local.toml", "local");
  return r;
}

// The value after `flag` in `argv`, or "".
std::string FlagValue(const std::vector<std::string>& argv,
                      const std::string& flag) {
  const auto it = std::find(argv.begin(), argv.end(), flag);
  return it == argv.end() || it + 1 == argv.end() ? "" : *(it + 1);
}

// 2 workers of up to 4: 4 worker slots with ports, the last two reserved;
// every task's cluster lists the 4 and says 2 are started; the plan says
// so, and plan.json keeps it.
TEST(PlanScale, MaxWorkersPlansReservedSlots) {
  StatusOr<Plan> plan = MakePlan(ScaleRequest(2, 4));
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->tasks.size(), 5u);
  EXPECT_EQ(plan->workers, 4);
  EXPECT_EQ(plan->launch_workers, 2);
  EXPECT_EQ(plan->StartedAtLaunch(), 2);
  for (const TaskPlan& t : plan->tasks) {
    EXPECT_EQ(plan->Reserved(t), t.role == Role::kWorker && t.index >= 2)
        << t.name();
    EXPECT_EQ(FlagValue(t.argv, "--workers"),
              "127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003,127.0.0.1:7004")
        << t.name();
    EXPECT_EQ(FlagValue(t.argv, "--started-workers"), "2") << t.name();
  }
  EXPECT_EQ(plan->tasks[4].port, 7004);
  const std::string text = PlanToText(*plan);
  EXPECT_THAT(text, HasSubstr("1 ps, 2 workers (up to 4) on 127.0.0.1"));
  EXPECT_THAT(text, HasSubstr("scale:    workers 2-3 reserved"));
  EXPECT_THAT(text, HasSubstr("worker:3  127.0.0.1:7004  spare"));
  StatusOr<Plan> back = PlanFromJson(PlanToJson(*plan), "plan.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->workers, 4);
  EXPECT_EQ(back->launch_workers, 2);
  EXPECT_TRUE(back->Reserved(back->tasks[3]));
}

// max_workers equal to workers reserves nothing, and the tasks get no
// --started-workers.
TEST(PlanScale, MaxWorkersOfTheRunsOwnCountReservesNothing) {
  StatusOr<Plan> one = MakePlan(ScaleRequest(2, 3));
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_THAT(PlanToText(*one), HasSubstr("scale:    worker 2 reserved"));
  StatusOr<Plan> plan = MakePlan(ScaleRequest(3, 3));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->launch_workers, 0);
  EXPECT_EQ(plan->StartedAtLaunch(), 3);
  for (const TaskPlan& t : plan->tasks) {
    EXPECT_FALSE(plan->Reserved(t)) << t.name();
    EXPECT_EQ(FlagValue(t.argv, "--started-workers"), "") << t.name();
  }
}

// Below workers (the profile's, or --workers), or in an allreduce run on
// a backend that cannot restart its workers at another size: refused
// naming the key.
TEST(PlanScale, MaxWorkersIsChecked) {
  PlanRequest r = ScaleRequest(3, 2);
  StatusOr<Plan> plan = MakePlan(r);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(plan.status()),
              HasSubstr("/jobs/census/profiles/local.toml:4:15: max_workers = "
                        "2 is less than the run's 3 workers"));
  r = ScaleRequest(2, 4);
  r.overrides.workers = 5;
  plan = MakePlan(r);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(plan.status()), HasSubstr("5 workers (--workers)"));
  // An allreduce run restarts its workers at the new size on the local
  // backend; under Slurm it cannot.
  r = ScaleRequest(2, 4);
  r.allreduce = true;
  plan = MakePlan(r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->workers, 4);
  EXPECT_EQ(plan->StartedAtLaunch(), 2);
  r.profile.backend = BackendKind::kSlurm;
  plan = MakePlanWith(r, PlanHooksOf(BackendKind::kSlurm));
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(plan.status()), HasSubstr("max_workers = 4: " + r.job +
                                                " trains in allreduce mode"));
  // Out of range in the profile itself: the file, line and column.
  StatusOr<Profile> bad = ParseProfile(
      "backend = \"local\"\nworkers = 2\nmax_workers = -1\n", "p.toml", "p");
  EXPECT_FALSE(bad.ok());
  EXPECT_THAT(Message(bad.status()), HasSubstr("p.toml:3"));
}

// What dtf scale may ask: up to the slots, never fewer than are started,
// and only of a run with reserved slots.
TEST(PlanScale, CheckScale) {
  StatusOr<Plan> plan = MakePlan(ScaleRequest(2, 4));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(CheckScale(*plan, 2, 3).ok());
  EXPECT_TRUE(CheckScale(*plan, 3, 4).ok());
  EXPECT_THAT(Message(CheckScale(*plan, 2, 5)), HasSubstr("4 worker slots"));
  EXPECT_THAT(Message(CheckScale(*plan, 3, 2)),
              HasSubstr("has started 3 workers"));
  StatusOr<Plan> fixed = MakePlan(ScaleRequest(2, 2));
  ASSERT_TRUE(fixed.ok()) << fixed.status();
  EXPECT_EQ(CheckScale(*fixed, 2, 3).code(), StatusCode::kFailedPrecondition);
}

// scale.json: written and read back; a file that is not one is an error
// naming it.
TEST(PlanScale, ScaleRequestFile) {
  testing::TempDir dir("dtf_plan_scale_test");
  StatusOr<std::optional<launch::ScaleRequest>> none =
      ReadScaleRequest(dir.path());
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->has_value());
  ASSERT_TRUE(WriteScaleRequest(dir.path(), 3).ok());
  StatusOr<std::optional<launch::ScaleRequest>> got =
      ReadScaleRequest(dir.path());
  ASSERT_TRUE(got.ok() && got->has_value()) << got.status();
  EXPECT_EQ((*got)->workers, 3);
  EXPECT_GT((*got)->requested_ms, 0);
  testing::WriteFile(dir.Join(kScaleFile), "{\"workers\": \"x\"}");
  got = ReadScaleRequest(dir.path());
  EXPECT_FALSE(got.ok());
  EXPECT_THAT(Message(got.status()), HasSubstr(dir.Join(kScaleFile)));
}

}  // namespace
}  // namespace dtf::launch
