// Real runs of stand-in tasks (tests/launch/launch_testing.h) on this
// machine: ports, logs, the end of a run, failures, cancellation, and that
// no process is ever left behind.
#include "lib/launch/local/local_backend.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/launch/run_id.h"
#include "lib/launch/run_layout.h"
#include "lib/launch/run_registry.h"
#include "tests/launch/launch_testing.h"
#include "tests/testing/temp_dir.h"

namespace dtf::launch {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

// Whether `port` on 127.0.0.1 can be bound without SO_REUSEPORT (nobody
// holds it).
bool PortFree(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0;
  ::close(fd);
  return ok;
}

class LocalRunTest : public ::testing::Test {
 protected:
  RunOptions Options() {
    RunOptions o;
    o.grace = 300ms;
    o.start_timeout = 60s;
    o.poll = 10ms;
    o.on_note = [this](std::string_view note) { notes_.emplace_back(note); };
    o.on_output = [this](const TaskPlan& task, Stream stream,
                         std::string_view line) {
      lines_.push_back(StrCat(
          task.name(), stream == Stream::kStdout ? " out: " : " err: ", line));
    };
    return o;
  }

  PlanRequest Request(const std::string& env = "") {
    return testing::Request(dir_, binary_,
                            "ps = 1\nworkers = 2\n[env]\n" + env);
  }

  // Every process the run started, and the children they started, are
  // gone.
  void ExpectNothingLeft(const LocalRun& run) {
    for (size_t i = 0; i < run.plan().tasks.size(); ++i) {
      const TaskPlan& t = run.plan().tasks[i];
      EXPECT_FALSE(testing::Alive(run.process(i).pid)) << t.name();
      const pid_t child = testing::ReadPid(t.dir + "/child.pid");
      if (child > 0) {
        EXPECT_TRUE(testing::WaitFor([&] { return !testing::Alive(child); }))
            << t.name() << "'s child " << child;
      }
    }
  }

  dtf::testing::TempDir dir_{"dtf_launch_test"};
  std::string binary_ = testing::WriteStandIn(dir_);
  std::vector<std::string> notes_;
  std::vector<std::string> lines_;
};

TEST_F(LocalRunTest, RunsUntilTheChiefExitsAndStopsTheRest) {
  StatusOr<std::unique_ptr<LocalRun>> run =
      LocalRun::Start(Request(), Options());
  ASSERT_TRUE(run.ok()) << run.status();
  const Plan& plan = (*run)->plan();
  EXPECT_TRUE(LooksLikeRunId(plan.run_id)) << plan.run_id;
  const RunOutcome outcome = (*run)->Wait();
  EXPECT_TRUE(outcome.status.ok()) << outcome.status;
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_EQ(outcome.state, RunState::kSucceeded);
  ExpectNothingLeft(**run);

  // The run directory: plan, secret (0600), tasks.json, logs, exit records.
  const std::string run_dir = plan.run_dir;
  EXPECT_EQ(fs::path(run_dir).parent_path(), fs::path(dir_.Join(".dtf/runs")));
  struct stat st {};
  ASSERT_EQ(::stat(plan.secret_file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(dtf::testing::ReadFile(plan.secret_file).size(), 64u);
  StatusOr<RunView> view = LoadRun(run_dir);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->record.state, RunState::kSucceeded);
  EXPECT_EQ(view->record.exit_code, 0);
  ASSERT_EQ(view->exits.size(), 3u);
  EXPECT_EQ(view->exits.at("worker:0").state, TaskState::kExited);
  EXPECT_EQ(view->exits.at("ps:0").state, TaskState::kStopped);
  EXPECT_EQ(view->exits.at("ps:0").signal, SIGTERM);
  EXPECT_EQ(dtf::testing::ReadFile(plan.tasks[1].stdout_file),
            "hello from worker:0\nchief done\n");
  EXPECT_THAT(dtf::testing::ReadFile(plan.tasks[2].stderr_file),
              HasSubstr("worker:1 starting"));
  // Output was forwarded as it came, tagged with its task.
  EXPECT_THAT(lines_, ::testing::Contains("worker:0 out: chief done"));
  EXPECT_THAT(lines_, ::testing::Contains("ps:0 err: ps:0 starting"));
  // The secret is never on a command line or in the plan.
  const std::string secret = dtf::testing::ReadFile(plan.secret_file);
  for (const TaskPlan& t : plan.tasks) {
    EXPECT_THAT(dtf::testing::ReadFile(t.dir + "/argv"),
                ::testing::Not(HasSubstr(secret)));
  }
  EXPECT_THAT(dtf::testing::ReadFile(run_dir + "/plan.json"),
              ::testing::Not(HasSubstr(secret)));
}

TEST_F(LocalRunTest, PortsAreHeldUntilEachTaskIsReadyThenReleased) {
  // No task is ready before the test writes <run dir>/go; the chief runs
  // until the test stops the run.
  StatusOr<std::unique_ptr<LocalRun>> run = LocalRun::Start(
      Request("STANDIN_READY_WAIT = \"go\"\nSTANDIN_CHIEF_WAIT = \"end\"\n"),
      Options());
  ASSERT_TRUE(run.ok()) << run.status();
  LocalRun& r = **run;
  EXPECT_FALSE(r.Poll());
  std::vector<int> ports;
  for (size_t i = 0; i < r.plan().tasks.size(); ++i) {
    const int port = r.plan().tasks[i].port;
    EXPECT_GT(port, 0);
    ports.push_back(port);
    EXPECT_FALSE(r.ready(i));
    EXPECT_TRUE(r.port_held(i));
    EXPECT_FALSE(PortFree(port)) << "port " << port << " is not held";
  }
  // The command lines name the chosen ports.
  EXPECT_EQ(r.plan().tasks[0].argv[9], StrCat("127.0.0.1:", ports[0]));
  dtf::testing::WriteFile(r.plan().run_dir + "/go", "");
  ASSERT_TRUE(testing::WaitFor([&] {
    r.Poll();
    return r.ready(0) && r.ready(1) && r.ready(2);
  }));
  for (size_t i = 0; i < ports.size(); ++i) {
    EXPECT_FALSE(r.port_held(i));
    EXPECT_TRUE(PortFree(ports[i])) << "port " << ports[i] << " still held";
  }
  StatusOr<RunRecord> record = ReadRunRecord(r.plan().run_dir);
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(record->tasks[1].state, TaskState::kRunning);
  EXPECT_EQ(record->tasks[1].address, StrCat("127.0.0.1:", ports[1]));
  r.Stop(CancelledError("test over"));
  ExpectNothingLeft(r);
}

TEST_F(LocalRunTest, FixedPortsComeFromTheProfile) {
  // Three consecutive ports that are free when looked at; another program
  // may take one before the run holds them, and the run then says so: try
  // the next three.
  int base = 0;
  StatusOr<std::unique_ptr<LocalRun>> run = InternalError("not started");
  for (int candidate = 20000 + (::getpid() % 10000), attempts = 0;
       attempts < 20 && candidate < 65000; candidate += 3) {
    if (!PortFree(candidate) || !PortFree(candidate + 1) ||
        !PortFree(candidate + 2)) {
      continue;
    }
    ++attempts;
    base = candidate;
    PlanRequest request = testing::Request(
        dir_, binary_, StrCat("ps = 1\nworkers = 2\nbase_port = ", base, "\n"));
    run = LocalRun::Start(request, Options());
    if (run.ok() || run.status().code() != StatusCode::kUnavailable ||
        Message(run.status()).find("is in use") == std::string_view::npos) {
      break;
    }
  }
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ((*run)->plan().tasks[0].port, base);
  EXPECT_EQ((*run)->plan().tasks[2].port, base + 2);
  EXPECT_TRUE((*run)->Wait().status.ok());
}

TEST_F(LocalRunTest, ChiefExitCodeIsTheRunsAndItsStderrIsQuoted) {
  StatusOr<std::unique_ptr<LocalRun>> run =
      LocalRun::Start(Request("STANDIN_CHIEF_EXIT = \"7\"\n"), Options());
  ASSERT_TRUE(run.ok()) << run.status();
  const RunOutcome outcome = (*run)->Wait();
  EXPECT_EQ(outcome.exit_code, 7);
  EXPECT_EQ(outcome.state, RunState::kFailed);
  EXPECT_THAT(Message(outcome.status),
              HasSubstr("the chief (worker:0) exited with status 7"));
  EXPECT_THAT(Message(outcome.status), HasSubstr("worker:0 starting"));
  ExpectNothingLeft(**run);
}

TEST_F(LocalRunTest, ATaskFailingAtOnceStopsTheOthers) {
  StatusOr<std::unique_ptr<LocalRun>> run = LocalRun::Start(
      Request("STANDIN_FAIL = \"ps:0\"\nSTANDIN_CHIEF_SLEEP = \"120\"\n"),
      Options());
  ASSERT_TRUE(run.ok()) << run.status();
  const auto started = std::chrono::steady_clock::now();
  const RunOutcome outcome = (*run)->Wait();
  // Well before the chief would have ended on its own.
  EXPECT_LT(std::chrono::steady_clock::now() - started, 60s);
  EXPECT_EQ(outcome.status.code(), StatusCode::kAborted);
  const std::string message(Message(outcome.status));
  EXPECT_THAT(message, HasSubstr("task ps:0 exited with status 3 before the "
                                 "run ended; stopped the other tasks"));
  EXPECT_THAT(message, HasSubstr("boom: ps:0 cannot start"));
  EXPECT_THAT(message, HasSubstr((*run)->plan().tasks[0].stderr_file));
  EXPECT_EQ(outcome.state, RunState::kFailed);
  ExpectNothingLeft(**run);
  StatusOr<RunView> view = LoadRun((*run)->plan().run_dir);
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->exits.at("ps:0").state, TaskState::kFailed);
  EXPECT_EQ(view->exits.at("ps:0").exit_code, 3);
  EXPECT_EQ(view->exits.at("worker:0").state, TaskState::kStopped);
  EXPECT_THAT(view->record.message, HasSubstr("boom"));
}

TEST_F(LocalRunTest, AWorkerFailingIsReportedAndTheRunGoesOn) {
  // The chief ends once the run has recorded worker:1's exit.
  StatusOr<std::unique_ptr<LocalRun>> run =
      LocalRun::Start(Request("STANDIN_FAIL = \"worker:1\"\n"
                              "STANDIN_CHIEF_WAIT = \"worker-1/exit.json\"\n"),
                      Options());
  ASSERT_TRUE(run.ok()) << run.status();
  const RunOutcome outcome = (*run)->Wait();
  EXPECT_TRUE(outcome.status.ok()) << outcome.status;
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_EQ(outcome.state, RunState::kSucceeded);
  EXPECT_THAT(notes_, ::testing::Contains(HasSubstr(
                          "task worker:1 exited with status 3; the run goes "
                          "on without it; the last lines of")));
  EXPECT_THAT(notes_, ::testing::Contains(HasSubstr("boom: worker:1")));
  ExpectNothingLeft(**run);
  StatusOr<RunView> view = LoadRun((*run)->plan().run_dir);
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->record.state, RunState::kSucceeded);
  EXPECT_EQ(view->exits.at("worker:1").state, TaskState::kFailed);
  EXPECT_EQ(view->exits.at("worker:1").exit_code, 3);
  EXPECT_EQ(view->exits.at("worker:0").state, TaskState::kExited);
}

// mode = "allreduce": worker:2 dies once; every other worker is stopped
// (not counted as failures), every worker is started again with
// --restore, and the run then succeeds.
TEST_F(LocalRunTest, AnAllreduceWorkerDyingRestartsEveryWorker) {
  PlanRequest request = testing::Request(
      dir_, binary_,
      "workers = 3\nmax_restarts = 2\n[env]\n"
      "STANDIN_FAIL_ONCE = \"worker:2\"\nSTANDIN_CHIEF_SLEEP = \"120\"\n"
      "STANDIN_RESTORED_CHIEF_SLEEP = \"0.5\"\n");
  request.allreduce = true;
  request.job_device = DeviceName{true, -1};
  StatusOr<std::unique_ptr<LocalRun>> run =
      LocalRun::Start(std::move(request), Options());
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_TRUE((*run)->plan().allreduce());
  const RunOutcome outcome = (*run)->Wait();
  EXPECT_TRUE(outcome.status.ok()) << outcome.status;
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_EQ(outcome.state, RunState::kSucceeded);
  EXPECT_THAT(notes_, ::testing::Contains(HasSubstr(
                          "task worker:2 exited with status 3; an allreduce "
                          "run restarts every worker from the last "
                          "checkpoint (1 of 2 restarts); the last lines of")));
  for (const char* name : {"worker:0", "worker:1", "worker:2"}) {
    EXPECT_THAT(notes_, ::testing::Contains(
                            HasSubstr(StrCat(name, " started again (pid "))))
        << name;
  }
  ExpectNothingLeft(**run);
  StatusOr<RunView> view = LoadRun((*run)->plan().run_dir);
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->record.state, RunState::kSucceeded);
  for (size_t i = 0; i < view->record.tasks.size(); ++i) {
    const TaskPlan& t = (*run)->plan().tasks[i];
    EXPECT_EQ(view->record.tasks[i].restarts, 1) << t.name();
    const std::string argv = dtf::testing::ReadFile(t.dir + "/argv");
    EXPECT_THAT(argv, HasSubstr("--restore\n")) << t.name();
  }
  EXPECT_EQ(view->exits.at("worker:0").state, TaskState::kExited);
}

// Out of restarts, an allreduce worker's death ends the run.
TEST_F(LocalRunTest, AnAllreduceWorkerDyingPastItsRestartsEndsTheRun) {
  PlanRequest request = testing::Request(
      dir_, binary_,
      "workers = 2\nmax_restarts = 1\n[env]\n"
      "STANDIN_FAIL = \"worker:1\"\nSTANDIN_CHIEF_SLEEP = \"120\"\n");
  request.allreduce = true;
  request.job_device = DeviceName{true, -1};
  StatusOr<std::unique_ptr<LocalRun>> run =
      LocalRun::Start(std::move(request), Options());
  ASSERT_TRUE(run.ok()) << run.status();
  const RunOutcome outcome = (*run)->Wait();
  EXPECT_EQ(outcome.state, RunState::kFailed);
  EXPECT_THAT(std::string(Message(outcome.status)),
              HasSubstr("task worker:1 exited with status 3 before the run "
                        "ended; an allreduce run cannot go on without one of "
                        "its workers"));
  EXPECT_THAT(std::string(Message(outcome.status)),
              HasSubstr("its 1 restarts (max_restarts) are used up"));
  ExpectNothingLeft(**run);
  StatusOr<RunView> view = LoadRun((*run)->plan().run_dir);
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->record.tasks[0].restarts, 1);
  EXPECT_EQ(view->exits.at("worker:1").state, TaskState::kFailed);
  EXPECT_EQ(view->exits.at("worker:0").state, TaskState::kStopped);
}

TEST_F(LocalRunTest, AWorkerKilledMidRunDoesNotStopTheRun) {
  // The chief ends when the test writes <run dir>/end.
  StatusOr<std::unique_ptr<LocalRun>> run =
      LocalRun::Start(Request("STANDIN_CHIEF_WAIT = \"end\"\n"), Options());
  ASSERT_TRUE(run.ok()) << run.status();
  LocalRun& r = **run;
  ASSERT_TRUE(testing::WaitFor([&] {
    r.Poll();
    return r.ready(0) && r.ready(1) && r.ready(2);
  }));
  ASSERT_EQ(::kill(r.process(2).pid, SIGKILL), 0);
  // The run goes on: the chief and the parameter server are still there.
  ASSERT_TRUE(testing::WaitFor([&] {
    r.Poll();
    return std::find(notes_.begin(), notes_.end(),
                     "task worker:1 killed by SIGKILL; the run goes on "
                     "without it") != notes_.end();
  }));
  EXPECT_TRUE(testing::Alive(r.process(0).pid));
  EXPECT_TRUE(testing::Alive(r.process(1).pid));
  StatusOr<RunRecord> record = ReadRunRecord(r.plan().run_dir);
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(record->state, RunState::kRunning);
  EXPECT_EQ(record->tasks[2].state, TaskState::kFailed);

  dtf::testing::WriteFile(r.plan().run_dir + "/end", "");
  const RunOutcome outcome = r.Wait();
  EXPECT_TRUE(outcome.status.ok()) << outcome.status;
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_EQ(outcome.state, RunState::kSucceeded);
  ExpectNothingLeft(r);
  StatusOr<RunView> view = LoadRun(r.plan().run_dir);
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->exits.at("worker:1").state, TaskState::kFailed);
  EXPECT_EQ(view->exits.at("worker:1").exit_code, 128 + SIGKILL);
  EXPECT_EQ(view->exits.at("worker:0").state, TaskState::kExited);
}

TEST_F(LocalRunTest, AParameterServerKilledMidRunStopsTheRun) {
  StatusOr<std::unique_ptr<LocalRun>> run =
      LocalRun::Start(Request("STANDIN_CHIEF_SLEEP = \"120\"\n"), Options());
  ASSERT_TRUE(run.ok()) << run.status();
  LocalRun& r = **run;
  ASSERT_TRUE(testing::WaitFor([&] {
    r.Poll();
    return r.ready(0) && r.ready(1) && r.ready(2);
  }));
  ASSERT_EQ(::kill(r.process(0).pid, SIGKILL), 0);
  const auto started = std::chrono::steady_clock::now();
  const RunOutcome outcome = r.Wait();
  // Well before the chief would have ended on its own.
  EXPECT_LT(std::chrono::steady_clock::now() - started, 60s);
  EXPECT_EQ(outcome.status.code(), StatusCode::kAborted);
  EXPECT_THAT(Message(outcome.status),
              HasSubstr("task ps:0 killed by SIGKILL before the run ended"));
  EXPECT_EQ(outcome.state, RunState::kFailed);
  ExpectNothingLeft(r);
}

// A restarted task's start timeout counts from its restart, not from the
// run's start: a PS killed well after start_timeout is started again (with
// --restore, its output appended) and the run completes.
TEST_F(LocalRunTest, APsKilledPastTheStartTimeoutIsRestartedAndTheRunGoesOn) {
  PlanRequest request =
      testing::Request(dir_, binary_,
                       "ps = 1\nworkers = 2\nmax_restarts = 1\n[env]\n"
                       "STANDIN_CHIEF_WAIT = \"go\"\n");
  request.job_checkpoint_every_steps = 100;
  RunOptions options = Options();
  options.start_timeout = 500ms;
  StatusOr<std::unique_ptr<LocalRun>> run =
      LocalRun::Start(std::move(request), options);
  ASSERT_TRUE(run.ok()) << run.status();
  LocalRun& r = **run;
  ASSERT_TRUE(testing::WaitFor([&] {
    r.Poll();
    return r.ready(0) && r.ready(1) && r.ready(2);
  }));
  const auto past = std::chrono::steady_clock::now() + 700ms;
  while (std::chrono::steady_clock::now() < past) {
    ASSERT_FALSE(r.Poll());
    std::this_thread::sleep_for(10ms);
  }
  const pid_t first = r.process(0).pid;
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  ASSERT_TRUE(testing::WaitFor([&] {
    EXPECT_FALSE(r.Poll()) << r.outcome().status;
    return r.process(0).pid != first && r.ready(0);
  }));
  const TaskPlan& ps = r.plan().tasks[0];
  EXPECT_THAT(dtf::testing::ReadFile(ps.dir + "/argv"), HasSubstr("--restore"));
  // Both attempts' output, one after the other.
  EXPECT_THAT(dtf::testing::ReadFile(ps.stdout_file),
              HasSubstr("hello from ps:0\nhello from ps:0\n"));
  dtf::testing::WriteFile(r.plan().run_dir + "/go", "");
  const RunOutcome outcome = r.Wait();
  EXPECT_TRUE(outcome.status.ok()) << outcome.status;
  EXPECT_EQ(outcome.state, RunState::kSucceeded);
  EXPECT_THAT(notes_, ::testing::Contains(HasSubstr(
                          "ps:0 killed by SIGKILL; starting it again (1 of 1 "
                          "restarts)")));
  ExpectNothingLeft(r);
}

TEST_F(LocalRunTest, CancelStopsEveryTask) {
  std::atomic<bool> cancel{false};
  RunOptions options = Options();
  options.cancel = &cancel;
  StatusOr<std::unique_ptr<LocalRun>> run =
      LocalRun::Start(Request("STANDIN_CHIEF_SLEEP = \"30\"\n"), options);
  ASSERT_TRUE(run.ok()) << run.status();
  LocalRun& r = **run;
  ASSERT_TRUE(testing::WaitFor([&] {
    r.Poll();
    return r.ready(0) && r.ready(1) && r.ready(2);
  }));
  cancel = true;
  const RunOutcome outcome = r.Wait();
  EXPECT_EQ(outcome.status.code(), StatusCode::kCancelled);
  EXPECT_EQ(outcome.state, RunState::kStopped);
  ExpectNothingLeft(r);
}

// A task that logs the SIGTERM it gets to <run dir>/signals.log and exits
// on it; the chief (worker:0) first takes 0.2 s "saving a checkpoint" and
// logs that too.
constexpr char kTermLogger[] = R"sh(#!/bin/sh
role= index= ready= ps= workers=
prev=
for a in "$@"; do
  case "$prev" in
    --role) role=$a ;;
    --index) index=$a ;;
    --ready-file) ready=$a ;;
    --ps) ps=$a ;;
    --workers) workers=$a ;;
  esac
  prev=$a
done
run=$(dirname "$(dirname "$ready")")
task="$role:$index"
log="$run/signals.log"
if [ "$task" = worker:0 ]; then
  trap 'echo "$task TERM" >> "$log"; sleep 0.2; echo "$task saved" >> "$log"; exit 0' TERM
else
  trap 'echo "$task TERM" >> "$log"; exit 0' TERM
fi
if [ "$role" = ps ]; then list=$ps; else list=$workers; fi
address=$(echo "$list" | cut -d, -f$((index + 1)))
printf '%s' "$address" > "$ready.tmp" && mv "$ready.tmp" "$ready"
while :; do sleep 0.05; done
)sh";

TEST_F(LocalRunTest, InterruptSendsSigtermToWorkersThenParameterServers) {
  const std::string logger = dir_.Join("term_logger.sh");
  dtf::testing::WriteFile(logger, kTermLogger);
  ::chmod(logger.c_str(), 0755);
  std::atomic<bool> cancel{false};
  RunOptions options = Options();
  options.grace = 5s;
  options.cancel = &cancel;
  PlanRequest request = testing::Request(dir_, logger, "ps = 2\nworkers = 2\n");
  StatusOr<std::unique_ptr<LocalRun>> run = LocalRun::Start(request, options);
  ASSERT_TRUE(run.ok()) << run.status();
  LocalRun& r = **run;
  ASSERT_TRUE(testing::WaitFor([&] {
    r.Poll();
    return r.ready(0) && r.ready(1) && r.ready(2) && r.ready(3);
  }));
  const auto interrupted = std::chrono::steady_clock::now();
  cancel = true;
  const RunOutcome outcome = r.Wait();
  const auto took = std::chrono::steady_clock::now() - interrupted;
  EXPECT_EQ(outcome.status.code(), StatusCode::kCancelled);
  // Every task went on SIGTERM, well within the grace period: none killed.
  EXPECT_LT(took, 4s);
  for (const std::string& note : notes_) {
    EXPECT_THAT(note, ::testing::Not(HasSubstr("killed"))) << note;
  }
  const std::string log =
      dtf::testing::ReadFile(r.plan().run_dir + "/signals.log");
  std::vector<std::string> lines;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 5u) << log;
  // The workers first, the chief done saving before a parameter server is
  // told to go.
  auto at = [&](const std::string& line) {
    return std::find(lines.begin(), lines.end(), line) - lines.begin();
  };
  for (const char* line : {"worker:0 TERM", "worker:1 TERM", "worker:0 saved",
                           "ps:0 TERM", "ps:1 TERM"}) {
    EXPECT_LT(at(line), 5) << line << " missing from\n" << log;
  }
  EXPECT_GT(at("ps:0 TERM"), at("worker:0 saved")) << log;
  EXPECT_GT(at("ps:1 TERM"), at("worker:0 saved")) << log;
  EXPECT_GT(at("ps:0 TERM"), at("worker:1 TERM")) << log;
  ExpectNothingLeft(r);
}

TEST_F(LocalRunTest, ATaskThatNeverBecomesReadyTimesOut) {
  RunOptions options = Options();
  options.start_timeout = 500ms;
  StatusOr<std::unique_ptr<LocalRun>> run = LocalRun::Start(
      Request("STANDIN_NO_READY = \"1\"\nSTANDIN_CHIEF_SLEEP = \"30\"\n"),
      options);
  ASSERT_TRUE(run.ok()) << run.status();
  const RunOutcome outcome = (*run)->Wait();
  EXPECT_EQ(outcome.status.code(), StatusCode::kDeadlineExceeded);
  EXPECT_THAT(Message(outcome.status),
              HasSubstr("task ps:0 did not write its ready file"));
  ExpectNothingLeft(**run);
}

TEST_F(LocalRunTest, AProgramThatCannotStartIsReportedAndNothingRuns) {
  PlanRequest request = testing::Request(dir_, dir_.Join("no-such-program"));
  StatusOr<std::unique_ptr<LocalRun>> run = LocalRun::Start(request, Options());
  ASSERT_FALSE(run.ok());
  EXPECT_THAT(Message(run.status()), HasSubstr("task ps:0 failed to start: " +
                                               dir_.Join("no-such-program")));
  // The run directory records the failure.
  StatusOr<std::vector<std::string>> runs = ListRuns(dir_.Join(".dtf/runs"));
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  StatusOr<RunRecord> record =
      ReadRunRecord(dir_.Join(".dtf/runs/" + runs->front()));
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(record->state, RunState::kFailed);
}

TEST_F(LocalRunTest, AHostNotOnThisMachineIsRefusedBeforeAnythingIsWritten) {
  PlanRequest request =
      testing::Request(dir_, binary_, "host = \"192.0.2.1\"\n");  // TEST-NET-1
  StatusOr<std::unique_ptr<LocalRun>> run = LocalRun::Start(request, Options());
  ASSERT_FALSE(run.ok());
  EXPECT_THAT(Message(run.status()),
              HasSubstr("host 192.0.2.1: not an address of this machine"));
  EXPECT_FALSE(fs::exists(dir_.Join(".dtf")));
}

TEST_F(LocalRunTest, DestroyingARunStopsIt) {
  std::vector<pid_t> pids;
  {
    StatusOr<std::unique_ptr<LocalRun>> run =
        LocalRun::Start(Request("STANDIN_CHIEF_SLEEP = \"30\"\n"), Options());
    ASSERT_TRUE(run.ok()) << run.status();
    for (size_t i = 0; i < 3; ++i) pids.push_back((*run)->process(i).pid);
  }
  for (pid_t pid : pids) EXPECT_FALSE(testing::Alive(pid));
}

}  // namespace
}  // namespace dtf::launch
