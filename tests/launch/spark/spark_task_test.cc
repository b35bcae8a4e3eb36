#include "lib/launch/spark/spark_task.h"

#include <atomic>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/launch/run_registry.h"
#include "tests/testing/temp_dir.h"

namespace dtf::launch::spark {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

SparkTaskSpec Spec() {
  SparkTaskSpec s;
  s.binary = "/x/dtf";
  s.job = "/j/dtf.toml";
  s.run_dir = "/r/run1";
  s.run_id = "run1";
  s.ps = 1;
  s.workers = 2;
  s.addresses = {"10.0.0.1:4000", "10.0.0.2:4001", "10.0.0.3:4002"};
  return s;
}

TEST(SparkTask, Argv) {
  SparkTaskSpec s = Spec();
  s.sets = {"train.steps=5"};
  s.resume = true;
  s.tls = true;
  s.metrics_out = "/m.json";
  EXPECT_THAT(
      SparkTaskArgv(s),
      ElementsAre("/x/dtf", "task", "spark", "--job", "/j/dtf.toml",
                  "--run-dir", "/r/run1", "--run-id", "run1", "--ps", "1",
                  "--workers", "2", "--threads", "0", "--set", "train.steps=5",
                  "--restore", "--tls", "--metrics-out", "/m.json"));
}

TEST(SparkTask, ServeCommandOfEachPartition) {
  SparkTaskSpec s = Spec();
  s.task_id = 0;
  StatusOr<SparkServeCommand> ps = MakeSparkServeCommand(s);
  ASSERT_TRUE(ps.ok()) << ps.status();
  EXPECT_EQ(ps->task.ToString(), "ps:0");
  EXPECT_EQ(ps->host, "10.0.0.1");
  EXPECT_EQ(ps->dir, "/r/run1/ps-0");
  const std::string argv = absl::StrJoin(ps->argv, " ");
  EXPECT_THAT(argv, HasSubstr("serve --job /j/dtf.toml --role ps --index 0 "
                              "--ps 10.0.0.1:4000 --workers "
                              "10.0.0.2:4001,10.0.0.3:4002"));
  EXPECT_THAT(argv, HasSubstr("--secret-file /r/run1/secret"));
  s.task_id = 2;
  s.tls = true;
  s.metrics_out = "/m.json";
  StatusOr<SparkServeCommand> w1 = MakeSparkServeCommand(s);
  ASSERT_TRUE(w1.ok()) << w1.status();
  EXPECT_EQ(w1->task.ToString(), "worker:1");
  EXPECT_EQ(w1->exit_file, "/r/run1/worker-1/exit.json");
  EXPECT_THAT(absl::StrJoin(w1->argv, " "),
              HasSubstr("--tls-dir /r/run1/tls --tls-task-names"));
  // Only the chief writes the metrics.
  EXPECT_THAT(absl::StrJoin(w1->argv, " "), Not(HasSubstr("--metrics-out")));
  s.task_id = 1;
  StatusOr<SparkServeCommand> chief = MakeSparkServeCommand(s);
  ASSERT_TRUE(chief.ok());
  EXPECT_THAT(absl::StrJoin(chief->argv, " "),
              HasSubstr("--metrics-out /m.json"));
}

// The tasks' S3 credentials travel as a file of the shared run directory,
// named on the command lines, never as values.
TEST(SparkTask, S3CredentialsAreAFileOfTheRunDirectory) {
  SparkTaskSpec s = Spec();
  s.s3 = true;
  const std::vector<std::string> argv = SparkTaskArgv(s);
  EXPECT_THAT(absl::StrJoin(argv, " "), HasSubstr("--threads 0 --s3"));
  s.task_id = 1;
  StatusOr<SparkServeCommand> chief = MakeSparkServeCommand(s);
  ASSERT_TRUE(chief.ok()) << chief.status();
  EXPECT_THAT(absl::StrJoin(chief->argv, " "),
              HasSubstr("--s3-credentials /r/run1/s3-credentials"));
  s.s3 = false;
  StatusOr<SparkServeCommand> without = MakeSparkServeCommand(s);
  ASSERT_TRUE(without.ok());
  EXPECT_THAT(absl::StrJoin(without->argv, " "),
              Not(HasSubstr("--s3-credentials")));
}

TEST(SparkTask, RefusesAddressesThatDoNotFit) {
  SparkTaskSpec s = Spec();
  s.task_id = 3;
  EXPECT_THAT(std::string(Message(MakeSparkServeCommand(s).status())),
              HasSubstr("--task-id 3: out of range for 3 tasks"));
  s.task_id = 0;
  s.addresses.pop_back();
  EXPECT_THAT(std::string(Message(MakeSparkServeCommand(s).status())),
              HasSubstr("2 addresses for 1 parameter servers and 2 workers"));
  s = Spec();
  s.task_id = 0;
  s.addresses[1] = "nohost";
  EXPECT_THAT(std::string(Message(MakeSparkServeCommand(s).status())),
              HasSubstr("is not host:port"));
}

TEST(SparkTask, BatchCommandIsThePlansWithThisDtf) {
  SparkTaskSpec s = Spec();
  s.ps = 0;
  s.workers = 2;
  s.batch = true;
  s.binary = "/exec/dtf-env/bin/dtf";
  s.addresses = {"10.0.0.1:1", "10.0.0.2:2"};
  s.task_id = 1;
  const std::vector<std::vector<std::string>> commands = {
      {"/opt/dtf", "predict", "--shard", "0"},
      {"/opt/dtf", "predict", "--shard", "1"}};
  StatusOr<SparkServeCommand> c = MakeSparkBatchCommand(s, commands);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->task.ToString(), "worker:1");
  EXPECT_THAT(c->argv,
              ElementsAre("/exec/dtf-env/bin/dtf", "predict", "--shard", "1"));
  EXPECT_THAT(
      std::string(Message(MakeSparkBatchCommand(s, {commands[0]}).status())),
      HasSubstr("1 task commands for 2 workers"));
  s.batch = false;
  EXPECT_THAT(std::string(Message(MakeSparkBatchCommand(s, commands).status())),
              HasSubstr("a batch run has workers only"));
}

TEST(SparkTask, RunRecordsTheEnd) {
  testing::TempDir dir("dtf_spark_task_test");
  SparkServeCommand c;
  c.task = TaskName{Role::kWorker, 1};
  c.host = "127.0.0.1";
  c.dir = dir.path() + "/worker-1";
  c.stdout_file = c.dir + "/stdout";
  c.stderr_file = c.dir + "/stderr";
  c.exit_file = c.dir + "/exit.json";
  c.argv = {"/bin/sh", "-c", "echo hi; echo oops >&2; exit 3"};
  StatusOr<ExitInfo> e = RunSparkTask(c, nullptr);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->code, 3);
  StatusOr<std::optional<ExitRecord>> rec = ReadExitRecord(c.exit_file);
  ASSERT_TRUE(rec.ok() && rec->has_value());
  EXPECT_EQ((*rec)->state, TaskState::kFailed);
  EXPECT_EQ((*rec)->task, "worker:1");
  EXPECT_EQ(*ReadFileToString(c.stdout_file), "hi\n");
  EXPECT_EQ(*ReadFileToString(c.dir + "/node"), "127.0.0.1\n");

  // Cancelled (Spark killed the task): its child is stopped, recorded so.
  std::atomic<bool> cancel{true};
  c.argv = {"/bin/sleep", "60"};
  e = RunSparkTask(c, &cancel);
  ASSERT_TRUE(e.ok()) << e.status();
  rec = ReadExitRecord(c.exit_file);
  ASSERT_TRUE(rec.ok() && rec->has_value());
  EXPECT_EQ((*rec)->state, TaskState::kStopped);
}

}  // namespace
}  // namespace dtf::launch::spark
