// dtf launch --resume with real tasks (dtf serve processes on this
// machine): a run whose chief was SIGKILLed goes on from its last
// checkpoint to the accuracy of an unbroken run; what cannot be resumed is
// refused; restarts without periodic checkpoints are refused at plan time.
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/launch/run_registry.h"
#include "tests/runtime/runtime_testing.h"
#include "tests/testing/paths.h"
#include "tests/testing/temp_dir.h"

namespace dtf {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

struct Result {
  int code = -1;
  std::string out, err;
};

// The first number after "key": in a metrics JSON file; -1 when absent.
double Metric(const std::string& json, const std::string& key) {
  const size_t at = json.find(StrCat("\"", key, "\":"));
  if (at == std::string::npos) return -1;
  return std::strtod(json.c_str() + at + key.size() + 3, nullptr);
}

class LaunchResumeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StatusOr<std::string> job = runtime::testing::WriteExampleJob(
        "titanic", dir_,
        {{"epochs = 20", "epochs = 60"},
         {"log_every_steps = 10", "log_every_steps = 0"}});
    ASSERT_TRUE(job.ok()) << job.status();
    ASSERT_TRUE(runtime::testing::LoadJobWithRecords(*job).ok());
  }

  Result Run(const std::string& args) {
    const std::string cmd =
        StrCat("cd '", dir_.path(), "' && NO_COLOR=1 '", DTF_BINARY, "' ", args,
               " >out.txt 2>err.txt </dev/null");
    const int status = std::system(cmd.c_str());
    Result r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = dtf::testing::ReadFile(dir_.Join("out.txt"));
    r.err = dtf::testing::ReadFile(dir_.Join("err.txt"));
    return r;
  }

  std::string RunDir(const std::string& id) const {
    return dir_.Join(StrCat(".dtf/runs/", id));
  }

  // Waits until run `id` has ended; its final state.
  std::string WaitOver(const std::string& id) {
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    while (Clock::now() < deadline) {
      StatusOr<launch::RunView> run = launch::LoadRun(RunDir(id));
      if (run.ok() && launch::RunStateFinal(run->record.state)) {
        return run->record.state;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return "still running after 60 s";
  }

  dtf::testing::TempDir dir_{"dtf_launch_resume_test"};
};

TEST_F(LaunchResumeTest, AResumedRunReachesTheAccuracyOfAnUnbrokenOne) {
  const std::string common =
      "launch --grace 1 --set train.checkpoint_every_steps=50";
  // The unbroken run.
  Result unbroken = Run(StrCat(common,
                               " --set train.output_dir=out-a "
                               "--metrics-out a.json"));
  ASSERT_EQ(unbroken.code, 0) << unbroken.err;
  const std::string a = dtf::testing::ReadFile(dir_.Join("a.json"));

  // The same job, its chief killed once a few checkpoints are written.
  Result started = Run(StrCat(common,
                              " --set train.output_dir=out-b "
                              "--metrics-out b.json --detach"));
  ASSERT_EQ(started.code, 0) << started.err;
  std::string id = started.out;
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  const fs::path generation =
      fs::path(dir_.Join("out-b")) / "checkpoint-150.dtf";
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (!fs::exists(generation) && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(fs::exists(generation)) << "no checkpoint at step 150";
  StatusOr<launch::RunView> run = launch::LoadRun(RunDir(id));
  ASSERT_TRUE(run.ok()) << run.status();
  const pid_t chief = run->record.tasks[size_t(run->plan.ps)].process.pid;
  ASSERT_GT(chief, 0);
  ASSERT_EQ(::kill(chief, SIGKILL), 0);
  ASSERT_EQ(WaitOver(id), "failed");
  EXPECT_FALSE(fs::exists(dir_.Join("b.json"))) << "the chief finished first";

  // dtf status shows the generations it can resume from.
  Result status = Run(StrCat("status ", id, " --json"));
  ASSERT_EQ(status.code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("\"resumable\": true"));
  EXPECT_THAT(status.out, HasSubstr("checkpoint-150.dtf"));
  status = Run(StrCat("status ", id));
  EXPECT_THAT(status.out, HasSubstr("checkpoints of this run"));

  Result resumed = Run(StrCat("launch --grace 1 --resume ", id));
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_THAT(resumed.err, HasSubstr("ps:0: restoring from " +
                                     dir_.Join("out-b/checkpoint.dtf")));
  EXPECT_THAT(resumed.err, HasSubstr("worker:0: resuming at global step"));
  EXPECT_THAT(resumed.err, HasSubstr(StrCat("run ", id, " succeeded")));
  // The earlier attempt's output is not shown again.
  EXPECT_THAT(resumed.err, ::testing::Not(HasSubstr("killed by SIGKILL")));
  const std::string b = dtf::testing::ReadFile(dir_.Join("b.json"));
  ASSERT_FALSE(b.empty());
  // It went on from the checkpoint rather than from the start: about as
  // many steps in all as the unbroken run.
  EXPECT_GE(Metric(b, "steps"), 0.9 * Metric(a, "steps")) << b;
  EXPECT_LE(Metric(b, "steps"), 1.1 * Metric(a, "steps")) << b;
  EXPECT_GE(Metric(a, "accuracy"), 0.75) << a;
  EXPECT_GE(Metric(b, "accuracy"), Metric(a, "accuracy") - 0.03)
      << "unbroken: " << a << "\nresumed: " << b;

  // A run that finished is not resumed.
  Result again = Run(StrCat("launch --resume ", id));
  EXPECT_NE(again.code, 0);
  EXPECT_THAT(again.err, HasSubstr(StrCat("run ", id,
                                          " finished (succeeded); there is "
                                          "nothing to resume")));
}

TEST_F(LaunchResumeTest, ARunWithoutACheckpointIsNotResumed) {
  Result failed = Run("launch --grace 1 --task-binary /bin/false");
  ASSERT_NE(failed.code, 0);
  Result r = Run("launch --resume");
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err, HasSubstr("has no checkpoint to resume from (no "
                               "checkpoint at " +
                               dir_.Join("out/checkpoint.dtf")));
}

TEST_F(LaunchResumeTest, RestartsWithoutPeriodicCheckpointsAreRefused) {
  fs::create_directories(dir_.Join("profiles"));
  dtf::testing::WriteFile(dir_.Join("profiles/local.toml"),
                          "backend = \"local\"\nmax_restarts = 1\n");
  Result r = Run("launch --dry-run");
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err,
              HasSubstr("profiles/local.toml:2:16: max_restarts = 1: a failed "
                        "task is restarted from the run's last "
                        "checkpoint"));
  EXPECT_THAT(r.err, HasSubstr("train.checkpoint_every_steps = 0"));
  r = Run("launch --dry-run --set train.checkpoint_every_steps=50");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("restarts: up to 1"));
}

}  // namespace
}  // namespace dtf
