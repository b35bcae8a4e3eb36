// The plan of a backend = "spark" profile: what dtf launch --dry-run shows,
// plan.json read back as written, and what MakePlan refuses.
#include "lib/launch/spark/spark_plan.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/launch/plan.h"
#include "lib/launch/profile.h"
#include "lib/launch/spark/spark_driver.h"

namespace dtf::launch {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string StrJoinForTest(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) {
    if (!out.empty()) out += " ";
    out += w;
  }
  return out;
}

constexpr char kSparkProfile[] = R"(backend = "spark"
ps = 1
workers = 2

[spark]
master = "spark://m1:7077"
executor_cores = 2
conf = { "spark.driver.host" = "10.0.0.9" }

[env]
OMP_NUM_THREADS = "1"
)";

StatusOr<PlanRequest> SparkRequest(std::string extra = "") {
  PlanRequest r;
  r.job = "/shared/census/dtf.toml";
  r.binary = "/opt/dtf/bin/dtf";
  DTF_ASSIGN_OR_RETURN(
      r.profile, ParseProfile(StrCat(extra, kSparkProfile),
                              "/shared/census/profiles/spark.toml", "spark"));
  r.overrides.sets = {"train.steps=100"};
  return r;
}

TEST(SparkPlan, DryRunShowsSubmitAndDriver) {
  StatusOr<PlanRequest> r = SparkRequest();
  ASSERT_TRUE(r.ok()) << r.status();
  StatusOr<Plan> plan = MakePlan(*r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->backend, BackendKind::kSpark);
  EXPECT_TRUE(plan->tls);
  ASSERT_EQ(plan->tasks.size(), 3u);
  const spark::SparkPlanPart& part = spark::SparkPartOf(*plan);
  const std::string submit = StrJoinForTest(part.submit);
  EXPECT_THAT(submit, HasSubstr("spark-submit --master spark://m1:7077 "
                                "--deploy-mode client --name dtf-<run-id>"));
  EXPECT_THAT(submit, HasSubstr("--conf spark.task.cpus=2"));
  EXPECT_THAT(submit, HasSubstr("--conf spark.cores.max=6"));
  EXPECT_THAT(submit, HasSubstr("--conf spark.stage.maxConsecutiveAttempts=1"));
  EXPECT_THAT(submit, HasSubstr("--conf spark.executorEnv.OMP_NUM_THREADS=1"));
  // The profile's own settings come after dtf's.
  EXPECT_THAT(submit, HasSubstr("--conf spark.driver.host=10.0.0.9 --archives "
                                "/shared/census/.dtf/pack/dtf-env-<env-id>.zip"
                                "#dtf-env,/shared/census/.dtf/pack/"
                                "job-<job-id>.zip#dtf-job "
                                "/shared/census/.dtf/runs/<run-id>/driver.py"));
  EXPECT_THAT(part.driver, HasSubstr("\\\"dtf-env/bin/dtf\\\",\\\"task\\\","
                                     "\\\"spark\\\",\\\"--job\\\","
                                     "\\\"dtf-job/dtf.toml\\\""));
  EXPECT_THAT(part.driver, Not(HasSubstr("secret-file")));
  EXPECT_THAT(StrJoinForTest(plan->tasks[2].argv),
              HasSubstr("--task-id 2 --addresses"));
  const std::string text = PlanToText(*plan);
  EXPECT_THAT(text, HasSubstr("spark-submit (its output in"));
  EXPECT_THAT(text, HasSubstr("driver (/shared/census/.dtf/runs/<run-id>/"
                              "driver.py):\n#!/usr/bin/env python3"));
}

TEST(SparkPlan, JsonReadsBack) {
  StatusOr<PlanRequest> r = SparkRequest();
  ASSERT_TRUE(r.ok()) << r.status();
  StatusOr<Plan> plan = MakePlan(*r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::string json = PlanToJson(*plan);
  StatusOr<Plan> back = PlanFromJson(json, "plan.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(PlanToJson(*back), json);
  EXPECT_EQ(spark::SparkPartOf(*back).driver, spark::SparkPartOf(*plan).driver);
}

TEST(SparkPlan, WithoutShippingRunsInPlace) {
  StatusOr<PlanRequest> r = SparkRequest();
  ASSERT_TRUE(r.ok()) << r.status();
  spark::MutableSparkTable(&r->profile).ship = false;
  StatusOr<Plan> plan = MakePlan(*r);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const spark::SparkPlanPart& part = spark::SparkPartOf(*plan);
  EXPECT_TRUE(part.archives.empty());
  EXPECT_THAT(StrJoinForTest(part.submit), Not(HasSubstr("--archives")));
  EXPECT_THAT(part.driver, HasSubstr("\\\"/opt/dtf/bin/dtf\\\""));
}

TEST(SparkPlan, RefusesRestarts) {
  StatusOr<PlanRequest> r = SparkRequest("max_restarts = 2\n");
  ASSERT_TRUE(r.ok()) << r.status();
  StatusOr<Plan> plan = MakePlan(*r);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(Message(plan.status())),
              HasSubstr("spark.toml:1:16: max_restarts = 2: Spark runs "
                        "restart no task"));
}

}  // namespace
}  // namespace dtf::launch
