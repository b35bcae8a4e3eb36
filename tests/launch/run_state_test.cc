#include "lib/launch/run_state.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/launch/run_registry.h"
#include "tests/testing/temp_dir.h"

namespace dtf::launch {
namespace {

using ::testing::HasSubstr;

TEST(RunState, TextFormsRoundTrip) {
  for (TaskState s :
       {TaskState::kStarting, TaskState::kRunning, TaskState::kExited,
        TaskState::kFailed, TaskState::kStopped, TaskState::kLost}) {
    EXPECT_EQ(ParseTaskState(TaskStateName(s)), s) << TaskStateName(s);
  }
  for (RunState s :
       {RunState::kStarting, RunState::kRunning, RunState::kSucceeded,
        RunState::kFailed, RunState::kStopped}) {
    EXPECT_EQ(ParseRunState(RunStateName(s)), s) << RunStateName(s);
  }
  EXPECT_EQ(TaskStateName(TaskState::kExited), "exited");
  EXPECT_EQ(TaskStateName(TaskState::kLost), "lost");
  EXPECT_EQ(RunStateName(RunState::kSucceeded), "succeeded");
  EXPECT_EQ(ParseTaskState("succeeded"), std::nullopt);
  EXPECT_EQ(ParseRunState("exited"), std::nullopt);
  EXPECT_EQ(ParseRunState(""), std::nullopt);
}

TEST(RunState, FinalStates) {
  EXPECT_FALSE(IsFinal(TaskState::kStarting));
  EXPECT_FALSE(IsFinal(TaskState::kRunning));
  EXPECT_TRUE(IsFinal(TaskState::kExited));
  EXPECT_TRUE(IsFinal(TaskState::kFailed));
  EXPECT_TRUE(IsFinal(TaskState::kStopped));
  EXPECT_TRUE(IsFinal(TaskState::kLost));
  EXPECT_FALSE(IsFinal(RunState::kStarting));
  EXPECT_FALSE(IsFinal(RunState::kRunning));
  EXPECT_TRUE(IsFinal(RunState::kSucceeded));
  EXPECT_TRUE(IsFinal(RunState::kFailed));
  EXPECT_TRUE(IsFinal(RunState::kStopped));
}

TEST(RunState, AnUnknownStateInARecordIsDataLossNamingTheFile) {
  dtf::testing::TempDir dir;
  const std::string exit_file = dir.Join("exit.json");
  dtf::testing::WriteFile(exit_file,
                          R"({"task": "ps:0", "state": "done", "exit_code": 0,
                              "signal": 0, "finished_ms": 5})");
  StatusOr<std::optional<ExitRecord>> exit = ReadExitRecord(exit_file);
  ASSERT_FALSE(exit.ok());
  EXPECT_EQ(exit.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(Message(exit.status()), HasSubstr(exit_file));
  EXPECT_THAT(Message(exit.status()), HasSubstr("done"));

  RunRecord r;
  r.run_id = "x";
  ASSERT_TRUE(WriteRunRecord(dir.path(), r).ok());
  const std::string tasks_file = dir.Join("tasks.json");
  std::string text = dtf::testing::ReadFile(tasks_file);
  const size_t at = text.find("\"starting\"");
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, 10, "\"paused\"");
  dtf::testing::WriteFile(tasks_file, text);
  StatusOr<RunRecord> back = ReadRunRecord(dir.path());
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(Message(back.status()), HasSubstr(tasks_file));
  EXPECT_THAT(Message(back.status()), HasSubstr("paused"));
}

}  // namespace
}  // namespace dtf::launch
