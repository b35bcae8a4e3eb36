#include "lib/launch/ssh/task_exec.h"

#include <signal.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/launch/run_registry.h"
#include "tests/testing/temp_dir.h"

namespace dtf::launch {
namespace {

using ::testing::HasSubstr;

// exit.json in `dir`, once the monitor has written it (up to 20 s).
std::optional<ExitRecord> AwaitExit(const std::string& dir) {
  for (int i = 0; i < 400; ++i) {
    StatusOr<std::optional<ExitRecord>> r = ReadExitRecord(dir + "/exit.json");
    if (r.ok() && r->has_value()) return **r;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return std::nullopt;
}

TEST(TaskExec, RecordsOutputEnvironmentAndExit) {
  testing::TempDir dir;
  ASSERT_TRUE(WriteFileAtomically(dir.Join("env"),
                                  EnvFileText({{"FOO", "a b\nc"}, {"X", "1"}}))
                  .ok());
  TaskExecOptions o;
  o.task = "worker:1";
  o.dir = dir.path();
  o.env_file = dir.Join("env");
  o.argv = {"/bin/sh", "-c",
            "echo out; echo err >&2; echo \"$FOO|$X\"; exit 3"};
  StatusOr<ProcessId> id = StartMonitoredTask(o);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_GT(id->pid, 1);
  std::optional<ExitRecord> exit = AwaitExit(dir.path());
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->task, "worker:1");
  EXPECT_EQ(exit->state, TaskState::kFailed);
  EXPECT_EQ(exit->exit_code, 3);
  EXPECT_EQ(testing::ReadFile(dir.Join("stdout")), "out\na b\nc|1\n");
  EXPECT_EQ(testing::ReadFile(dir.Join("stderr")), "err\n");
  EXPECT_EQ(testing::ReadFile(dir.Join("pid")),
            StrCat(id->pid, " ", id->start_ticks, "\n"));
}

TEST(TaskExec, SignalStopsTheGroupAndMarksItStopped) {
  testing::TempDir dir;
  TaskExecOptions o;
  o.task = "ps:0";
  o.dir = dir.path();
  // A child in the same group: the whole group goes.
  o.argv = {"/bin/sh", "-c", "sleep 60 & sleep 60; wait"};
  StatusOr<ProcessId> id = StartMonitoredTask(o);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_TRUE(GroupAlive(*id));
  StatusOr<bool> signalled = SignalTask(dir.path(), SIGTERM);
  ASSERT_TRUE(signalled.ok()) << signalled.status();
  EXPECT_TRUE(*signalled);
  std::optional<ExitRecord> exit = AwaitExit(dir.path());
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->state, TaskState::kStopped);
  EXPECT_EQ(exit->signal, SIGTERM);
  for (int i = 0; i < 100 && GroupAlive(*id); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_FALSE(GroupAlive(*id));
  // Nothing left to signal.
  signalled = SignalTask(dir.path(), SIGTERM);
  ASSERT_TRUE(signalled.ok());
  EXPECT_FALSE(*signalled);
}

// A pid file without a start time names a pid that may be anyone's now.
TEST(TaskExec, SignalRefusesAPidFileWithoutAStartTime) {
  testing::TempDir dir;
  TaskExecOptions o;
  o.task = "worker:0";
  o.dir = dir.path();
  o.argv = {"/bin/sleep", "30"};
  StatusOr<ProcessId> id = StartMonitoredTask(o);
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(
      WriteFileAtomically(dir.path() + "/pid", StrCat(id->pid, " 0\n")).ok());
  StatusOr<bool> signalled = SignalTask(dir.path(), SIGKILL);
  ASSERT_FALSE(signalled.ok());
  EXPECT_EQ(signalled.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(
      Message(signalled.status()),
      HasSubstr("/pid: pid " + std::to_string(id->pid) + " has no start time"));
  EXPECT_TRUE(GroupAlive(*id));
  ::kill(-id->pid, SIGKILL);
  for (int i = 0; i < 100 && GroupAlive(*id); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

TEST(TaskExec, CleanExitIsExited) {
  testing::TempDir dir;
  TaskExecOptions o;
  o.task = "worker:0";
  o.dir = dir.path();
  o.argv = {"/bin/true"};
  ASSERT_TRUE(StartMonitoredTask(o).ok());
  std::optional<ExitRecord> exit = AwaitExit(dir.path());
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->state, TaskState::kExited);
  EXPECT_EQ(exit->exit_code, 0);
}

TEST(TaskExec, ErrorsNameWhatIsWrong) {
  testing::TempDir dir;
  TaskExecOptions o;
  o.task = "worker:0";
  o.dir = dir.path();
  o.argv = {dir.Join("no-such-program")};
  StatusOr<ProcessId> id = StartMonitoredTask(o);
  ASSERT_FALSE(id.ok());
  EXPECT_THAT(Message(id.status()), HasSubstr("no-such-program"));
  // The monitor that failed to start it wrote no exit.json.
  EXPECT_FALSE(testing::ReadFile(dir.Join("exit.json")).size() > 0);

  o.argv = {"/bin/true"};
  o.dir = dir.Join("missing");
  id = StartMonitoredTask(o);
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(Message(id.status()), HasSubstr("missing"));

  ASSERT_TRUE(
      WriteFileAtomically(dir.Join("bad-env"), std::string("NOEQUALS\0", 9))
          .ok());
  o.dir = dir.path();
  o.env_file = dir.Join("bad-env");
  id = StartMonitoredTask(o);
  ASSERT_FALSE(id.ok());
  EXPECT_THAT(Message(id.status()),
              HasSubstr("bad-env: entry 1 is not NAME=VALUE"));
}

}  // namespace
}  // namespace dtf::launch
