// dtf launch, status, logs and stop as a user meets them, through the
// binary, with stand-in tasks (--task-binary) in place of `dtf serve`.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/launch/run_registry.h"
#include "tests/launch/launch_testing.h"
#include "tests/testing/paths.h"
#include "tests/testing/temp_dir.h"

namespace dtf::launch {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

struct Result {
  int code = -1;
  std::string out, err;
};

class LaunchCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dtf::testing::WriteFile(dir_.Join("dtf.toml"), "");
    fs::create_directories(dir_.Join("profiles"));
  }

  // `out` is where stdout goes: out.txt, or /dev/full to see a write fail.
  Result Run(const std::string& args, const std::string& out = "out.txt") {
    dtf::testing::WriteFile(dir_.Join("out.txt"), "");
    const std::string cmd = "cd '" + dir_.path() + "' && NO_COLOR=1 '" +
                            DTF_BINARY + "' " + args + " >" + out +
                            " 2>err.txt </dev/null";
    const int status = std::system(cmd.c_str());
    Result r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = dtf::testing::ReadFile(dir_.Join("out.txt"));
    r.err = dtf::testing::ReadFile(dir_.Join("err.txt"));
    return r;
  }

  void Profile(const std::string& text) {
    dtf::testing::WriteFile(dir_.Join("profiles/local.toml"), text);
  }

  std::string StandIn() const { return " --task-binary " + binary_; }

  std::string OnlyRunDir() {
    StatusOr<std::vector<std::string>> runs = ListRuns(dir_.Join(".dtf/runs"));
    EXPECT_TRUE(runs.ok() && runs->size() == 1);
    return runs.ok() && !runs->empty() ? dir_.Join(".dtf/runs/" + runs->back())
                                       : "";
  }

  void ExpectNothingLeft(const std::string& run_dir) {
    StatusOr<RunView> run = LoadRun(run_dir);
    ASSERT_TRUE(run.ok()) << run.status();
    for (size_t i = 0; i < run->record.tasks.size(); ++i) {
      const pid_t pid = run->record.tasks[i].process.pid;
      EXPECT_TRUE(testing::WaitFor([&] { return !testing::Alive(pid); }));
      const pid_t child =
          testing::ReadPid(run->plan.tasks[i].dir + "/child.pid");
      if (child > 0) {
        EXPECT_TRUE(testing::WaitFor([&] { return !testing::Alive(child); }));
      }
    }
  }

  dtf::testing::TempDir dir_{"dtf_launch_cli_test"};
  std::string binary_ = testing::WriteStandIn(dir_);
};

TEST_F(LaunchCliTest, DryRunPrintsThePlanAndTouchesNothing) {
  const std::vector<std::string> before = dir_.List();
  Result text = Run("launch --profile local --dry-run");
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_THAT(text.out,
              HasSubstr("profile:  local (<built-in local profile>)"));
  EXPECT_THAT(text.out, HasSubstr("worker:0  127.0.0.1:0  chief"));
  EXPECT_THAT(text.out,
              HasSubstr(" serve \\\n      --job " + dir_.Join("dtf.toml")));
  Result json =
      Run("launch --job dtf.toml --dry-run --json --ps 2 --workers 3 "
          "--set data.shards=2 --metrics-out m.json");
  ASSERT_EQ(json.code, 0) << json.err;
  EXPECT_THAT(json.out, HasSubstr("\"run_id\": \"<run-id>\""));
  EXPECT_THAT(json.out, HasSubstr("\"port\": 0"));
  EXPECT_THAT(json.out, HasSubstr("\"task\": \"worker:2\""));
  EXPECT_THAT(json.out, HasSubstr("\"" + dir_.Join("m.json") + "\""));
  EXPECT_EQ(Run("launch --job dtf.toml --dry-run --json --ps 2 --workers 3 "
                "--set data.shards=2 --metrics-out m.json")
                .out,
            json.out);
  std::vector<std::string> after = dir_.List();
  after.erase(std::remove_if(after.begin(), after.end(),
                             [](const std::string& n) {
                               return n == "out.txt" || n == "err.txt";
                             }),
              after.end());
  EXPECT_EQ(after, before);
  EXPECT_FALSE(fs::exists(dir_.Join(".dtf")));
}

TEST_F(LaunchCliTest, BadProfileAndFlagsAreUsageErrors) {
  Profile("ps = 1\nworkrs = 2\n");
  Result r = Run("launch --dry-run");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("profiles/local.toml:2:1: workrs: unknown key "
                               "(did you mean workers?)"));
  Profile("");
  r = Run("launch --dry-run --set steps=3");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--set steps=3: no section"));
  // A set key the job file does not have stops the dry run, as it would
  // stop every task of the real launch.
  r = Run("launch --dry-run --set data.shard=2");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--set data.shard=2: data.shard: unknown key "
                               "(did you mean shards?)"));
  r = Run("launch --set data.shards=two");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("data.shards: expected an integer"));
  EXPECT_FALSE(fs::exists(dir_.Join(".dtf/runs")));
  r = Run("launch --dry-run --profile prod");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("profiles/prod.toml"));
  r = Run("launch --dry-run --job missing.toml");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("missing.toml"));
  r = Run("launch --json");
  EXPECT_EQ(r.code, 2);
}

// tls = true on loopback: the dry run says so and passes each task its TLS
// directory; the launch writes the run's certificates, private to the
// launcher, and warns of nothing.
TEST_F(LaunchCliTest, TlsOnLoopbackWhenAsked) {
  Profile("tls = true\n");
  Result dry = Run("launch --dry-run");
  ASSERT_EQ(dry.code, 0) << dry.err;
  EXPECT_THAT(dry.out, HasSubstr("tls:      mutual TLS with the run's own CA"));
  EXPECT_THAT(dry.out,
              HasSubstr("--tls-dir '" + dir_.Join(".dtf/runs/<run-id>/tls'")));
  Result r = Run("launch --grace 0.3" + StandIn());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.err, Not(HasSubstr("warning")));
  const std::string tls = OnlyRunDir() + "/tls";
  struct stat st;
  ASSERT_EQ(::stat(tls.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  for (const char* key :
       {"ca.key", "ps-0.key", "worker-1.key", "launcher.key"}) {
    ASSERT_EQ(::stat((tls + "/" + key).c_str(), &st), 0) << key;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << key;
  }
  EXPECT_THAT(dtf::testing::ReadFile(OnlyRunDir() + "/worker-0/argv"),
              HasSubstr("--tls-dir\n" + tls + "\n"));
}

// tls = false on a plan that leaves loopback is allowed, with a warning at
// launch naming the profile's key (the launch then fails here: 192.0.2.1
// is no address of this machine).
TEST_F(LaunchCliTest, TlsOffOffLoopbackWarns) {
  Profile("host = \"192.0.2.1\"\ntls = false\n");
  Result dry = Run("launch --dry-run");
  ASSERT_EQ(dry.code, 0) << dry.err;
  EXPECT_THAT(dry.out, HasSubstr("tls:      off (tls = false)"));
  EXPECT_THAT(dry.out, Not(HasSubstr("--tls-dir")));
  Result r = Run("launch --grace 0.3" + StandIn());
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err,
              HasSubstr("profiles/local.toml:2:7: tls = false: the run's "
                        "secret and every tensor cross the network in "
                        "plaintext"));
  // Without the key the same plan has TLS, and no warning.
  Profile("host = \"192.0.2.1\"\n");
  Result dry_on = Run("launch --dry-run");
  EXPECT_THAT(dry_on.out, HasSubstr("--tls-dir"));
  Result on = Run("launch --grace 0.3" + StandIn());
  EXPECT_THAT(on.err, Not(HasSubstr("plaintext")));
}

TEST_F(LaunchCliTest, ForegroundRunStreamsOutputAndExitsWithTheChiefsCode) {
  Profile("[env]\nSTANDIN_CHIEF_EXIT = \"7\"\n");
  Result r = Run("launch --grace 0.3" + StandIn());
  EXPECT_EQ(r.code, 7) << r.err;
  EXPECT_THAT(r.out, HasSubstr("[worker:0] hello from worker:0"));
  EXPECT_THAT(r.out, HasSubstr("[worker:0] chief done"));
  EXPECT_THAT(r.out, HasSubstr("[ps:0]     hello from ps:0"));
  EXPECT_THAT(r.err, HasSubstr("[worker:1] worker:1 starting"));
  EXPECT_THAT(r.err, HasSubstr("the chief (worker:0) exited with status 7"));
  EXPECT_THAT(r.out + r.err, Not(HasSubstr("\033[")));  // NO_COLOR
  const std::string run_dir = OnlyRunDir();
  ExpectNothingLeft(run_dir);

  Result status = Run("status");
  EXPECT_EQ(status.code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("failed (exit code 7)"));
  EXPECT_THAT(status.out, HasSubstr("worker:0  failed (7)"));
  Result json = Run("status --json");
  EXPECT_THAT(json.out, HasSubstr("\"exit_code\": 7"));

  // What a task wrote to its stdout, then to its stderr, all on stdout
  // (`dtf logs worker:0 | grep loss` finds what a task prints on stderr).
  Result one = Run("logs worker:0");
  EXPECT_EQ(one.code, 0) << one.err;
  EXPECT_EQ(one.out, "hello from worker:0\nchief done\nworker:0 starting\n");
  EXPECT_EQ(one.err, "");
  Result all = Run("logs " + fs::path(run_dir).filename().string());
  EXPECT_THAT(all.out, HasSubstr("[worker:1] hello from worker:1\n"));
  EXPECT_THAT(all.out, HasSubstr("[worker:1] worker:1 starting\n"));
  EXPECT_EQ(all.err, "");
  Result logs_json = Run("logs --json worker:0");
  EXPECT_EQ(logs_json.code, 0) << logs_json.err;
  EXPECT_EQ(logs_json.out,
            "{\"task\": \"worker:0\", \"stream\": \"stdout\", \"line\": "
            "\"hello from worker:0\"}\n"
            "{\"task\": \"worker:0\", \"stream\": \"stdout\", \"line\": "
            "\"chief done\"}\n"
            "{\"task\": \"worker:0\", \"stream\": \"stderr\", \"line\": "
            "\"worker:0 starting\"}\n");
  Result all_json = Run("logs --json");
  EXPECT_THAT(all_json.out,
              HasSubstr("{\"task\": \"ps:0\", \"stream\": "
                        "\"stderr\", \"line\": \"ps:0 starting\"}"));
  // A full stdout is an error of the environment, not a success.
  Result full = Run("logs worker:0", "/dev/full");
  EXPECT_EQ(full.code, 3);
  EXPECT_THAT(full.err, HasSubstr("<stdout>"));
  Result stop_full = Run("stop", "/dev/full");
  EXPECT_EQ(stop_full.code, 3);
  Result status_full = Run("status", "/dev/full");
  EXPECT_EQ(status_full.code, 3);
  Result follow = Run("logs -f worker:1");  // the run is over: returns
  EXPECT_EQ(follow.code, 0);
  EXPECT_EQ(Run("logs worker:9").code, 2);
}

TEST_F(LaunchCliTest, ATaskFailingStopsTheRunWithItsStderr) {
  Profile("[env]\nSTANDIN_FAIL = \"ps:0\"\nSTANDIN_CHIEF_SLEEP = \"60\"\n");
  Result r = Run("launch --grace 0.3" + StandIn());
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("task ps:0 exited with status 3 before the "
                               "run ended"));
  EXPECT_THAT(r.err, HasSubstr("boom: ps:0 cannot start"));
  ExpectNothingLeft(OnlyRunDir());
}

TEST_F(LaunchCliTest, AWorkerFailingIsReportedAndTheRunGoesOn) {
  // The chief ends once the run has recorded worker:1's exit.
  Profile(
      "[env]\nSTANDIN_FAIL = \"worker:1\"\n"
      "STANDIN_CHIEF_WAIT = \"worker-1/exit.json\"\n");
  Result r = Run("launch --grace 0.3" + StandIn());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("task worker:1 exited with status 3; the run "
                               "goes on without it"));
  EXPECT_THAT(r.err, HasSubstr("succeeded"));
  ExpectNothingLeft(OnlyRunDir());
  Result status = Run("status");
  EXPECT_THAT(status.out, HasSubstr("worker:1  failed (3)"));
}

// mode = "allreduce" (dtf.toml below), 3 workers, from a profile's lines.
void AllreduceJob(const dtf::testing::TempDir& dir) {
  dtf::testing::WriteFile(dir.Join("dtf.toml"),
                          "[schema]\nlabel = \"y\"\n"
                          "[[schema.columns]]\nname = \"y\"\ntype = \"int\"\n"
                          "[[schema.columns]]\nname = \"x\"\ntype = \"float\"\n"
                          "[[features.numeric]]\nname = \"x\"\n"
                          "[model]\ntype = \"linear\"\n"
                          "[train]\nmode = \"allreduce\"\ndevice = \"cuda\"\n");
}

// mode = "allreduce": the other workers would wait for a dead one in their
// collectives for ever, so a worker's death restarts every worker from the
// last checkpoint, and ends the run once the restarts are used up.
TEST_F(LaunchCliTest, AnAllreduceWorkerFailingStopsTheRunPastItsRestarts) {
  AllreduceJob(dir_);
  Profile(
      "workers = 3\nmax_restarts = 1\n[env]\nSTANDIN_FAIL = \"worker:2\"\n"
      "STANDIN_CHIEF_SLEEP = \"60\"\n");
  const auto start = std::chrono::steady_clock::now();
  Result r = Run("launch --grace 0.3" + StandIn());
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("task worker:2 exited with status 3; an "
                               "allreduce run restarts every worker from the "
                               "last checkpoint (1 of 1 restarts)"));
  EXPECT_THAT(r.err, HasSubstr("task worker:2 exited with status 3 before "
                               "the run ended; an allreduce run cannot go on "
                               "without one of its workers"));
  EXPECT_THAT(r.err, HasSubstr("its 1 restarts (max_restarts) are used up"));
  EXPECT_THAT(r.err, HasSubstr("boom: worker:2 cannot start"));
  EXPECT_THAT(r.err, Not(HasSubstr("starting it again")));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
  ExpectNothingLeft(OnlyRunDir());
}

TEST_F(LaunchCliTest, AnAllreduceWorkerFailingRestartsEveryWorker) {
  AllreduceJob(dir_);
  // worker:2 fails on its first start only; the chief runs until stopped,
  // then, restarted, ends the run.
  Profile(
      "workers = 3\nmax_restarts = 2\n[env]\n"
      "STANDIN_FAIL_ONCE = \"worker:2\"\nSTANDIN_CHIEF_SLEEP = \"60\"\n"
      "STANDIN_RESTORED_CHIEF_SLEEP = \"0.5\"\n");
  const auto start = std::chrono::steady_clock::now();
  Result r = Run("launch --grace 0.3" + StandIn());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("task worker:2 exited with status 3; an "
                               "allreduce run restarts every worker from the "
                               "last checkpoint (1 of 2 restarts)"));
  EXPECT_THAT(r.err, HasSubstr("boom: worker:2 fails once"));
  EXPECT_THAT(r.err, HasSubstr("succeeded"));
  EXPECT_THAT(r.err, Not(HasSubstr("cannot go on")));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
  const std::string run_dir = OnlyRunDir();
  ExpectNothingLeft(run_dir);
  for (const char* task : {"worker-0", "worker-1", "worker-2"}) {
    EXPECT_THAT(dtf::testing::ReadFile(run_dir + "/" + task + "/argv"),
                HasSubstr("--restore\n"))
        << task;
  }
  Result status = Run("status --json");
  EXPECT_THAT(status.out, HasSubstr("\"restarts\": 1"));
  EXPECT_THAT(status.out, Not(HasSubstr("\"restarts\": 0")));
}

// --deadline: past it every task is stopped and the launch fails saying so.
TEST_F(LaunchCliTest, TheDeadlineStopsTheRun) {
  Profile("[env]\nSTANDIN_CHIEF_SLEEP = \"60\"\n");
  const auto start = std::chrono::steady_clock::now();
  Result r = Run("launch --deadline 1 --grace 0.3" + StandIn());
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_THAT(r.err, HasSubstr("the run's deadline (--deadline 1 s) passed; "
                               "stopped every task"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
  const std::string run_dir = OnlyRunDir();
  ExpectNothingLeft(run_dir);
  StatusOr<RunRecord> record = ReadRunRecord(run_dir);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->state, RunState::kFailed);
}

TEST_F(LaunchCliTest, DetachThenStatusLogsAndStop) {
  Profile("[env]\nSTANDIN_CHIEF_SLEEP = \"60\"\n");
  Result r = Run("launch --detach --grace 0.3" + StandIn());
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string id = r.out.substr(0, r.out.find('\n'));
  EXPECT_TRUE(fs::exists(dir_.Join(".dtf/runs/" + id + "/plan.json"))) << id;
  EXPECT_THAT(r.err, HasSubstr("dtf stop " + id));
  const std::string run_dir = OnlyRunDir();
  ASSERT_TRUE(testing::WaitFor([&] {
    return dtf::testing::ReadFile(run_dir + "/worker-1/stdout") != "";
  }));
  Result status = Run("status " + id);
  EXPECT_EQ(status.code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("detached"));
  EXPECT_THAT(status.out, HasSubstr("chief unreachable"));
  Result logs = Run("logs " + id + " worker:1");
  EXPECT_THAT(logs.out, HasSubstr("hello from worker:1"));

  Result stop = Run("stop --grace 2");
  EXPECT_EQ(stop.code, 0) << stop.err;
  EXPECT_THAT(stop.out, HasSubstr("stopped ps:0, worker:0, worker:1"));
  ExpectNothingLeft(run_dir);
  Result again = Run("stop " + id);
  EXPECT_EQ(again.code, 0);
  EXPECT_THAT(again.out, HasSubstr("nothing was running (stopped)"));
  Result json = Run("stop --json " + id);
  EXPECT_EQ(json.code, 0) << json.err;
  EXPECT_EQ(json.out, "{\"run\": \"" + id +
                          "\", \"state\": \"stopped\", \"stopped\": [], "
                          "\"killed\": [], \"unverifiable\": []}\n");
  Result watch = Run("status --watch");
  EXPECT_EQ(watch.code, 0);
  EXPECT_THAT(watch.out, HasSubstr(": stopped"));
}

TEST_F(LaunchCliTest, InterruptStopsEveryTask) {
  Profile("[env]\nSTANDIN_CHIEF_SLEEP = \"60\"\n");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::chdir(dir_.path().c_str());
    const int null_fd = ::open("/dev/null", O_WRONLY);
    ::dup2(null_fd, 1);
    ::dup2(null_fd, 2);
    ::execl(DTF_BINARY, DTF_BINARY, "launch", "--grace", "2", "--task-binary",
            binary_.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  std::string run_dir;
  ASSERT_TRUE(testing::WaitFor([&] {
    StatusOr<std::vector<std::string>> runs = ListRuns(dir_.Join(".dtf/runs"));
    if (!runs.ok() || runs->empty()) return false;
    run_dir = dir_.Join(".dtf/runs/" + runs->back());
    StatusOr<RunRecord> record = ReadRunRecord(run_dir);
    if (!record.ok()) return false;
    for (const TaskRecord& t : record->tasks) {
      if (t.state != TaskState::kRunning) return false;
    }
    return true;
  }));
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  ExpectNothingLeft(run_dir);
  StatusOr<RunRecord> record = ReadRunRecord(run_dir);
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(record->state, RunState::kStopped);
}

}  // namespace
}  // namespace dtf::launch
