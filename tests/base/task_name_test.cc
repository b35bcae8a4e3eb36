#include "lib/base/task_name.h"

#include <gtest/gtest.h>

namespace dtf {
namespace {

TEST(TaskName, RoundTripsEveryRole) {
  for (Role role : kRoles) {
    EXPECT_EQ(ParseRoleName(RoleName(role)), role);
    TaskName name{role, 7};
    StatusOr<TaskName> parsed = ParseTaskName(name.ToString());
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, name);
  }
  EXPECT_EQ((TaskName{Role::kPs, 0}).ToString(), "ps:0");
  EXPECT_EQ((TaskName{Role::kWorker, 12}).DirName(), "worker-12");
  EXPECT_EQ(TaskName{}.ToString(), "worker:0");
}

TEST(TaskName, OrdersByRoleThenIndex) {
  EXPECT_LT((TaskName{Role::kPs, 5}), (TaskName{Role::kWorker, 0}));
  EXPECT_LT((TaskName{Role::kWorker, 2}), (TaskName{Role::kWorker, 10}));
}

TEST(TaskName, BadNamesAreQuoted) {
  EXPECT_EQ(ParseTaskName("worker").status().message(),
            "task \"worker\": expected type:index, as \"worker:0\"");
  EXPECT_EQ(ParseTaskName("boss:1").status().message(),
            "task \"boss:1\": type \"boss\" is not one of ps, worker, chief, "
            "evaluator");
  EXPECT_EQ(ParseTaskName("ps:-1").status().message(),
            "task \"ps:-1\": index \"-1\" is not a non-negative integer");
  EXPECT_EQ(ParseTaskName("ps:1x").status().message(),
            "task \"ps:1x\": index \"1x\" is not a non-negative integer");
  EXPECT_FALSE(ParseTaskName("ps:99999999999").ok());
  EXPECT_FALSE(ParseRoleName("Worker").has_value());
  EXPECT_EQ(ParseRole("boss").status().message(),
            "task type \"boss\" is not one of ps, worker, chief, evaluator");
}

TEST(TaskName, IsTaskOfChecksTheRolePrefixOnly) {
  EXPECT_TRUE(IsTaskOf("worker:3", Role::kWorker));
  EXPECT_FALSE(IsTaskOf("worker:3", Role::kPs));
  EXPECT_FALSE(IsTaskOf("workers:3", Role::kWorker));
  EXPECT_FALSE(IsTaskOf("worker", Role::kWorker));
  EXPECT_TRUE(IsTaskOf("ps:0", Role::kPs));
}

}  // namespace
}  // namespace dtf
