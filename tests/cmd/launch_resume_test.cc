// dtf launch --resume with real tasks (dtf serve processes on this
// machine): a run whose chief was SIGKILLed goes on from its last
// checkpoint to the accuracy of an unbroken run; what cannot be resumed is
// refused; restarts without periodic checkpoints are refused at plan time.
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/launch/run_registry.h"
#include "lib/runtime/checkpoint/bundle.h"
#include "lib/runtime/checkpoint/checkpoint.h"
#include "lib/runtime/checkpoint/checkpoint_files.h"
#include "tests/runtime/runtime_testing.h"
#include "tests/testing/paths.h"
#include "tests/testing/temp_dir.h"

namespace dtf {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
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
      if (run.ok() && launch::IsFinal(run->record.state)) {
        return std::string(launch::RunStateName(run->record.state));
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

// An allreduce run is resumed as any other: worker 0 restores the
// checkpoint and broadcasts it to every rank (the runtime's part is tested
// in tests/runtime/train/allreduce_restore_test.cc and allreduce_test.cc, and
// on CPU workers through the binary in tests/e2e/launch_allreduce.sh).
TEST_F(LaunchResumeTest, AnAllreduceRunIsResumed) {
  Result failed =
      Run("launch --grace 1 --task-binary /bin/false --set "
          "train.mode=allreduce --set train.device=cuda");
  ASSERT_NE(failed.code, 0);
  StatusOr<std::vector<std::string>> runs =
      launch::ListRuns(dir_.Join(".dtf/runs"));
  ASSERT_TRUE(runs.ok() && runs->size() == 1);
  StatusOr<JobFile> job = LoadJobFile(dir_.Join("dtf.toml"));
  ASSERT_TRUE(job.ok()) << job.status();
  runtime::Bundle b;
  b.AddString(std::string(runtime::kCheckpointRunIdEntry), runs->back());
  b.AddString(std::string(runtime::kCheckpointFingerprintEntry),
              runtime::CheckpointFingerprint(*job));
  b.AddInt64s("train/global_step", std::vector<int64_t>{40});
  b.AddInt64s("train/input_position", std::vector<int64_t>{0, 0, 40, 40});
  fs::create_directories(dir_.Join("out"));
  ASSERT_TRUE(b.WriteFile(dir_.Join("out/checkpoint.dtf")).ok());
  Result r = Run("launch --resume --dry-run");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("--restore"));
  EXPECT_THAT(r.out, Not(HasSubstr("ps:0")));
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

// The census job in sync mode, 6 epochs of 64 steps a worker, without
// shuffling (so that a position is exact): each worker reads 2 of the 4
// training files, 16280 records an epoch.
class LaunchPositionsTest : public LaunchResumeTest {
 protected:
  static constexpr int64_t kShare = 16280;
  static constexpr int64_t kEpochs = 6;

  void SetUp() override {
    StatusOr<std::string> job = runtime::testing::WriteExampleJob(
        "census", dir_,
        {{"epochs = 10", "epochs = 6"},
         {"shuffle_buffer = 10000", "shuffle_buffer = 0"}});
    ASSERT_TRUE(job.ok()) << job.status();
    ASSERT_TRUE(runtime::testing::LoadJobWithRecords(*job).ok());
  }

  // Starts a detached run; its id.
  std::string Detached(const std::string& args) {
    Result started = Run(StrCat(args, " --detach"));
    EXPECT_EQ(started.code, 0) << started.err;
    std::string id = started.out;
    while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) {
      id.pop_back();
    }
    return id;
  }

  // SIGKILLs task `task` of run `id` once out/ holds a checkpoint of global
  // step `step` or later that records worker:1 past its start.
  void KillOnceWritten(const std::string& id, int64_t step, size_t task) {
    auto written = [&] {
      for (const runtime::CheckpointGeneration& g :
           runtime::ListCheckpointGenerations(dir_.Join("out"))) {
        if (g.step < step) continue;
        StatusOr<runtime::Bundle> b = runtime::Bundle::ReadFile(g.path);
        if (!b.ok()) continue;  // removed meanwhile
        StatusOr<runtime::CheckpointInfo> info =
            runtime::ReadCheckpointInfo(*b);
        if (info.ok() && info->worker_positions.size() == 2 &&
            info->worker_positions[1] && Read(*info->worker_positions[1]) > 0) {
          return true;
        }
      }
      return false;
    };
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    while (!written() && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ASSERT_TRUE(written()) << "no checkpoint of step " << step
                           << " or later with worker:1's position";
    StatusOr<launch::RunView> run = launch::LoadRun(RunDir(id));
    ASSERT_TRUE(run.ok()) << run.status();
    const pid_t pid = run->record.tasks[task].process.pid;
    ASSERT_GT(pid, 0);
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
  }

  // The records a worker read before `p`.
  static int64_t Read(const InputPosition& p) {
    return p.epoch * kShare + p.epoch_record;
  }
};

// "worker:1: N examples in" in `text`; -1 when absent.
int64_t WorkerExamples(const std::string& text) {
  const std::string key = "worker:1: ";
  for (size_t at = text.find(key); at != std::string::npos;
       at = text.find(key, at + 1)) {
    char* end = nullptr;
    const long long n = std::strtoll(text.c_str() + at + key.size(), &end, 10);
    if (end != text.c_str() + at + key.size() &&
        std::string_view(end).starts_with(" examples in")) {
      return n;
    }
  }
  return -1;
}

// A resumed run's other worker reads on from the position the checkpoint
// recorded for it, not from the start of the chief's epoch: it reads its
// share exactly once in all, and the run takes the steps of an unbroken one.
TEST_F(LaunchPositionsTest, AResumedWorkerReadsOnFromItsRecordedPosition) {
  // Every step waits for both workers, the first ones too.
  const std::string common =
      "launch --grace 1 --set train.checkpoint_every_steps=50 "
      "--set train.replicas_to_aggregate=2";
  Result unbroken =
      Run(StrCat(common, " --set train.output_dir=out-a --metrics-out a.json"));
  ASSERT_EQ(unbroken.code, 0) << unbroken.err;
  ASSERT_EQ(WorkerExamples(unbroken.err), kShare * kEpochs) << unbroken.err;
  const std::string a = dtf::testing::ReadFile(dir_.Join("a.json"));

  const std::string id = Detached(StrCat(common, " --metrics-out b.json"));
  ASSERT_FALSE(id.empty());
  StatusOr<launch::RunView> run = launch::LoadRun(RunDir(id));
  ASSERT_TRUE(run.ok()) << run.status();
  // Checkpoints at steps 50, 100, ...: none at an epoch's end (64 steps).
  KillOnceWritten(id, 100, size_t(run->plan.ps));
  ASSERT_EQ(WaitOver(id), "failed");

  // The checkpoint records both workers' positions; in sync mode worker:1's
  // is that of the checkpoint's step (64 steps of 256 records an epoch).
  StatusOr<runtime::Bundle> bundle =
      runtime::Bundle::ReadFile(dir_.Join("out/checkpoint.dtf"));
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  StatusOr<runtime::CheckpointInfo> info = runtime::ReadCheckpointInfo(*bundle);
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->worker_positions.size(), 2u);
  ASSERT_TRUE(info->worker_positions[1].has_value());
  const InputPosition p = *info->worker_positions[1];
  // (Its first step may count for no global step: dropped as stale when
  // the PS applied the chief's first step before it knew worker:1.)
  const int64_t steps = p.epoch * 64 + (p.epoch_record + 255) / 256;
  EXPECT_GE(steps, info->global_step) << p.epoch << " " << p.epoch_record;
  EXPECT_LE(steps, info->global_step + 1) << p.epoch << " " << p.epoch_record;
  // Past the start of the chief's epoch, where it used to read again from.
  EXPECT_GT(Read(p), info->position.epoch * kShare);

  Result resumed = Run(StrCat("launch --grace 1 --resume ", id));
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_THAT(
      resumed.err,
      HasSubstr(StrCat("worker:1: resuming at global step ", info->global_step,
                       ", epoch ", p.epoch + 1, ", record ", p.epoch_record,
                       " of its input (its recorded position")));
  // Exactly the rest of its share, and the steps of the unbroken run.
  EXPECT_EQ(WorkerExamples(resumed.err), kShare * kEpochs - Read(p))
      << resumed.err;
  const std::string b = dtf::testing::ReadFile(dir_.Join("b.json"));
  EXPECT_NEAR(Metric(b, "steps"), Metric(a, "steps"), 2) << a << "\n" << b;
}

// A worker other than the chief that is killed and restarted
// (max_restarts) reads on from the position the run's last checkpoint
// recorded for it, or the later one the parameter servers committed for
// it, rather than its share's start: exactly the rest of its share.
TEST_F(LaunchPositionsTest, ARestartedWorkerReadsOnFromItsRecordedPosition) {
  fs::create_directories(dir_.Join("profiles"));
  dtf::testing::WriteFile(dir_.Join("profiles/local.toml"),
                          "backend = \"local\"\nmax_restarts = 1\n");
  const std::string id = Detached(
      "launch --grace 1 --set train.checkpoint_every_steps=50 "
      "--set train.mode=async");
  ASSERT_FALSE(id.empty());
  StatusOr<launch::RunView> run = launch::LoadRun(RunDir(id));
  ASSERT_TRUE(run.ok()) << run.status();
  // Global steps count both workers' pushes: worker:1 is about 75 steps in.
  KillOnceWritten(id, 150, size_t(run->plan.ps) + 1);
  ASSERT_EQ(WaitOver(id), "succeeded");
  const std::string err = dtf::testing::ReadFile(
      run->plan.tasks[size_t(run->plan.ps) + 1].stderr_file);
  // "worker:1: resuming at global step G, epoch E, record R of its input
  // (its recorded position; ...)".
  const std::string key = "worker:1: resuming at global step ";
  const size_t at = err.find(key);
  ASSERT_NE(at, std::string::npos) << err;
  long long step = 0, epoch = 0, record = 0;
  ASSERT_EQ(std::sscanf(err.c_str() + at + key.size(),
                        "%lld, epoch %lld, record %lld of its input", &step,
                        &epoch, &record),
            3)
      << err;
  EXPECT_THAT(err.substr(at), HasSubstr("of its input (its recorded position"));
  // Where the parameter servers went on past the checkpoint it reads on
  // from the position they committed for it instead: "worker:1: resuming
  // at epoch E, record R of its input instead (...)".
  const std::string instead = "worker:1: resuming at epoch ";
  if (const size_t later = err.find(instead, at); later != std::string::npos) {
    ASSERT_EQ(
        std::sscanf(err.c_str() + later + instead.size(),
                    "%lld, record %lld of its input instead", &epoch, &record),
        2)
        << err;
  }
  const InputPosition p{epoch - 1, 0, 0, record};
  EXPECT_GT(Read(p), 0) << err;
  // The restarted process read the rest of its share, not all of it.
  EXPECT_EQ(WorkerExamples(err.substr(at)), kShare * kEpochs - Read(p)) << err;
}

}  // namespace
}  // namespace dtf
