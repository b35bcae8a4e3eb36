#include "lib/launch/slurm/slurm_task.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/launch/run_registry.h"
#include "tests/testing/temp_dir.h"

namespace dtf::launch::slurm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

SlurmRunSpec Spec() {
  SlurmRunSpec spec;
  spec.binary = "/opt/dtf/bin/dtf";
  spec.job = "/shared/census/dtf.toml";
  spec.run_dir = "/shared/runs/r1";
  spec.run_id = "r1";
  spec.ps = 1;
  spec.workers = 3;
  spec.base_port = 31000;
  return spec;
}

// Two nodes of two tasks each.
Environment TaskEnv(int procid) {
  return {{"SLURM_PROCID", std::to_string(procid)},
          {"SLURM_NTASKS", "4"},
          {"SLURM_LOCALID", std::to_string(procid % 2)},
          {"SLURM_STEP_NODELIST", "n[1-2]"},
          {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"},
          {"SLURMD_NODENAME", procid < 2 ? "n1" : "n2"}};
}

TEST(SlurmTask, ParameterServer) {
  StatusOr<SlurmServeCommand> c = MakeSlurmServeCommand(Spec(), TaskEnv(0));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->slot.name(), "ps:0");
  EXPECT_EQ(c->dir, "/shared/runs/r1/ps-0");
  EXPECT_EQ(c->stdout_file, "/shared/runs/r1/ps-0/stdout");
  EXPECT_EQ(c->stderr_file, "/shared/runs/r1/ps-0/stderr");
  EXPECT_THAT(
      c->argv,
      ElementsAre("/opt/dtf/bin/dtf", "serve", "--job",
                  "/shared/census/dtf.toml", "--role", "ps", "--index", "0",
                  "--ps", "n1:31000", "--workers", "n1:31001,n2:31000,n2:31001",
                  "--run-id", "r1", "--run-dir", "/shared/runs/r1",
                  "--secret-file", "/shared/runs/r1/secret", "--ready-file",
                  "/shared/runs/r1/ps-0/ready", "--threads", "0"));
  EXPECT_TRUE(c->env.empty());
}

// The tasks read the run's S3 settings and credentials from the shared
// run directory, where the launcher wrote them.
TEST(SlurmTask, S3CredentialsFromTheRunDirectory) {
  SlurmRunSpec spec = Spec();
  spec.s3 = true;
  EXPECT_THAT(SlurmTaskArgv(spec), ::testing::Contains("--s3"));
  StatusOr<SlurmServeCommand> c = MakeSlurmServeCommand(spec, TaskEnv(2));
  ASSERT_TRUE(c.ok()) << c.status();
  const auto it = std::find(c->argv.begin(), c->argv.end(), "--s3-credentials");
  ASSERT_NE(it, c->argv.end());
  EXPECT_EQ(*(it + 1), "/shared/runs/r1/s3-credentials");
  spec.s3 = false;
  EXPECT_THAT(SlurmTaskArgv(spec), ::testing::Not(::testing::Contains("--s3")));
}

TEST(SlurmTask, ChiefGetsMetricsAndEveryTaskItsFlags) {
  SlurmRunSpec spec = Spec();
  spec.sets = {"train.steps=10"};
  spec.resume = true;
  spec.tls = true;
  spec.metrics_out = "/shared/out/m.json";
  spec.threads = 2;
  StatusOr<SlurmServeCommand> c = MakeSlurmServeCommand(spec, TaskEnv(1));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->slot.name(), "worker:0");
  EXPECT_THAT(
      c->argv,
      ElementsAre("/opt/dtf/bin/dtf", "serve", "--job",
                  "/shared/census/dtf.toml", "--role", "worker", "--index", "0",
                  "--ps", "n1:31000", "--workers", "n1:31001,n2:31000,n2:31001",
                  "--run-id", "r1", "--run-dir", "/shared/runs/r1",
                  "--secret-file", "/shared/runs/r1/secret", "--ready-file",
                  "/shared/runs/r1/worker-0/ready", "--threads", "2", "--set",
                  "train.steps=10", "--restore", "--metrics-out",
                  "/shared/out/m.json", "--tls-dir", "/shared/runs/r1/tls",
                  "--tls-task-names"));
  c = MakeSlurmServeCommand(spec, TaskEnv(2));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->slot.name(), "worker:1");
  EXPECT_THAT(c->argv, ::testing::Not(::testing::Contains("--metrics-out")));
}

TEST(SlurmTask, WorkersTakeTheStepsGpus) {
  SlurmRunSpec spec = Spec();
  spec.gpus_per_node = 2;
  Environment env = TaskEnv(3);
  StatusOr<SlurmServeCommand> c = MakeSlurmServeCommand(spec, env);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->slot.gpu, 1);
  EXPECT_THAT(c->env, ElementsAre(Pair("CUDA_VISIBLE_DEVICES", "1")));
  EXPECT_THAT(c->argv, ::testing::Contains("train.device=cuda"));
  // Slurm's own CUDA_VISIBLE_DEVICES for the step: the task picks its entry.
  env["CUDA_VISIBLE_DEVICES"] = "4,6";
  c = MakeSlurmServeCommand(spec, env);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->env, ElementsAre(Pair("CUDA_VISIBLE_DEVICES", "6")));
  env["CUDA_VISIBLE_DEVICES"] = "4";
  c = MakeSlurmServeCommand(spec, env);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(Message(c.status()),
            "CUDA_VISIBLE_DEVICES=\"4\": 1 GPUs visible on n2, but "
            "slurm.gpus_per_node is 2");
  // Parameter servers compute on the CPU.
  c = MakeSlurmServeCommand(spec, TaskEnv(0));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->env.empty());
  EXPECT_THAT(c->argv,
              ::testing::Not(::testing::Contains("train.device=cuda")));
}

TEST(SlurmTask, EnvironmentThatDoesNotFitTheRun) {
  SlurmRunSpec spec = Spec();
  spec.workers = 2;
  StatusOr<SlurmServeCommand> c = MakeSlurmServeCommand(spec, TaskEnv(0));
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(Message(c.status()), HasSubstr("SLURM_NTASKS=\"4\": the run has "
                                             "1 parameter servers and 2 "
                                             "workers (3 tasks)"));
}

TEST(SlurmTask, TaskArgvCarriesTheSpec) {
  SlurmRunSpec spec = Spec();
  spec.sets = {"a.b=c"};
  EXPECT_THAT(SlurmTaskArgv(spec),
              ElementsAre("/opt/dtf/bin/dtf", "task", "slurm", "--job",
                          "/shared/census/dtf.toml", "--run-dir",
                          "/shared/runs/r1", "--run-id", "r1", "--ps", "1",
                          "--workers", "3", "--threads", "0", "--base-port",
                          "31000", "--gpus-per-node", "0", "--set", "a.b=c"));
}

// With slots reserved (max_workers), every task's dtf serve is told how
// many workers started; the slots from there up are the reserved ones.
TEST(SlurmTask, StartedWorkersReachEveryTaskAndMarkTheReservedSlots) {
  SlurmRunSpec spec = Spec();
  spec.started_workers = 2;
  EXPECT_THAT(absl::StrJoin(SlurmTaskArgv(spec), " "),
              HasSubstr("--started-workers 2"));
  StatusOr<SlurmServeCommand> c = MakeSlurmServeCommand(spec, TaskEnv(3));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->task.ToString(), "worker:2");
  EXPECT_THAT(absl::StrJoin(c->argv, " "), HasSubstr("--started-workers 2"));
  EXPECT_TRUE(ReservedSlot(spec, c->task));
  EXPECT_FALSE(ReservedSlot(spec, TaskName{Role::kWorker, 1}));
  EXPECT_FALSE(ReservedSlot(spec, TaskName{Role::kPs, 2}));
  spec.started_workers = 0;
  EXPECT_FALSE(ReservedSlot(spec, c->task));
}

// A reserved slot's wait: over once the launcher writes its start file;
// once the chief has ended instead, it records itself as never started.
TEST(SlurmTask, AReservedSlotWaitsForItsStartFileOrTheRunsEnd) {
  dtf::testing::TempDir dir;
  SlurmRunSpec spec = Spec();
  spec.run_dir = dir.path();
  spec.started_workers = 2;
  const DirTaskCommand slot =
      DirTaskFiles(spec, TaskName{Role::kWorker, 2}, "n2");
  std::filesystem::create_directories(slot.dir);
  std::filesystem::create_directories(dir.Join("worker-0"));
  std::thread start([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::ofstream(StrCat(slot.dir, "/start")) << "dtf scale\n";
  });
  StatusOr<bool> started = AwaitSlotStart(spec, slot, nullptr);
  start.join();
  ASSERT_TRUE(started.ok()) << started.status();
  EXPECT_TRUE(*started);
  EXPECT_FALSE(std::filesystem::exists(slot.exit_file));

  std::filesystem::remove(StrCat(slot.dir, "/start"));
  std::ofstream(dir.Join("worker-0/exit.json")) << "{}";
  started = AwaitSlotStart(spec, slot, nullptr);
  ASSERT_TRUE(started.ok()) << started.status();
  EXPECT_FALSE(*started);
  StatusOr<std::optional<ExitRecord>> record = ReadExitRecord(slot.exit_file);
  ASSERT_TRUE(record.ok()) << record.status();
  ASSERT_TRUE(record->has_value());
  EXPECT_EQ((*record)->task, "worker:2");
  EXPECT_EQ((*record)->state, TaskState::kReserved);

  // Signalled by Slurm (the step cancelled): no record.
  std::filesystem::remove(slot.exit_file);
  std::filesystem::remove(dir.Join("worker-0/exit.json"));
  std::atomic<bool> cancel{true};
  started = AwaitSlotStart(spec, slot, &cancel);
  ASSERT_TRUE(started.ok()) << started.status();
  EXPECT_FALSE(*started);
  EXPECT_FALSE(std::filesystem::exists(slot.exit_file));
}

// A batch run's task runs the command the plan gives worker SLURM_PROCID,
// in its task directory; `dtf task slurm` gets --batch.
TEST(SlurmTask, BatchTaskRunsItsCommand) {
  SlurmRunSpec spec = Spec();
  spec.ps = 0;
  spec.workers = 4;
  spec.batch = true;
  EXPECT_THAT(SlurmTaskArgv(spec), ::testing::Contains(std::string("--batch")));
  const std::vector<std::vector<std::string>> commands = {
      {"/bin/p", "0"}, {"/bin/p", "1"}, {"/bin/p", "2"}, {"/bin/p", "3"}};
  StatusOr<SlurmServeCommand> c =
      MakeSlurmBatchCommand(spec, TaskEnv(2), commands);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->slot.name(), "worker:2");
  EXPECT_EQ(c->slot.host, "n2");
  EXPECT_EQ(c->dir, "/shared/runs/r1/worker-2");
  EXPECT_EQ(c->stderr_file, "/shared/runs/r1/worker-2/stderr");
  EXPECT_THAT(c->argv, ElementsAre("/bin/p", "2"));
  EXPECT_TRUE(c->env.empty());

  // A GPU per node: the worker's GPU, as for dtf serve, without --set.
  spec.gpus_per_node = 2;
  c = MakeSlurmBatchCommand(spec, TaskEnv(3), commands);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->argv, ElementsAre("/bin/p", "3"));
  EXPECT_THAT(c->env, ElementsAre(Pair("CUDA_VISIBLE_DEVICES", "1")));

  // A plan that does not fit the step.
  StatusOr<SlurmServeCommand> bad =
      MakeSlurmBatchCommand(spec, TaskEnv(0), {{"/bin/p"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(Message(bad.status())),
              HasSubstr("has 1 task commands for 4 workers"));
  spec.ps = 1;
  spec.workers = 3;
  bad = MakeSlurmBatchCommand(spec, TaskEnv(0), commands);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(Message(bad.status())), HasSubstr("workers only"));
}

}  // namespace
}  // namespace dtf::launch::slurm
