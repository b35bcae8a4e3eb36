// Elastic workers' input (docs/launch.md, *Elastic workers*): a worker
// lost for good (no restarts, min_workers lets the run go on) is taken for
// dead by the chief, which hands its input shard on to a live worker; that
// worker reads it on from the position committed for it. A real run of
// `dtf serve` processes on the local backend; the input trace
// (lib/runtime/train/input_trace.h) lists the passenger ids each worker's
// steps read, and the test counts them: no example of any shard goes
// unread, and the lost worker's batches in flight are all that is read
// twice.
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/data/input_pipeline.h"
#include "lib/launch/local/local_backend.h"
#include "lib/launch/profile.h"
#include "lib/runtime/train/job_records.h"
#include "tests/runtime/local_run_request.h"
#include "tests/runtime/runtime_testing.h"
#include "tests/runtime/train/shard_ids.h"
#include "tests/testing/paths.h"
#include "tests/testing/temp_dir.h"

namespace dtf::runtime {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

constexpr int kWorkers = 3;
constexpr int kBatch = 32;

// The ids of each shard as the run's steps read them: a worker's "step"
// lines are its own shard's, its "take <shard>" lines another's.
using ShardIds = std::map<int, std::vector<int64_t>>;

void ReadTrace(const std::string& path, int worker, ShardIds* ids, int* steps) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string kind;
    words >> kind;
    int shard = worker;
    if (kind == "take") {
      words >> shard;
    } else if (kind != "step") {
      continue;
    }
    int64_t n = 0;
    for (int i = 0; i < 6; ++i) words >> n;  // global step and position
    for (int64_t id; words >> id;) (*ids)[shard].push_back(id);
    if (steps != nullptr && kind == "step") ++*steps;
  }
}

// The lines of `path` so far that are steps.
int StepsIn(const std::string& path) {
  ShardIds ids;
  int steps = 0;
  ReadTrace(path, 0, &ids, &steps);
  return steps;
}

// The lines of a task's stderr about input shards and positions.
std::string ShardNotes(const std::string& err) {
  std::istringstream in(err);
  std::string out;
  for (std::string line; std::getline(in, line);) {
    if (line.find("input") != std::string::npos ||
        line.find("taken for dead") != std::string::npos) {
      out += line + "\n";
    }
  }
  return out;
}

class ElasticInputRun : public ::testing::Test {
 protected:
  // Runs titanic on 1 PS and 3 workers (`profile_extra` added to the
  // profile; with launch_workers_ below 3, 3 worker slots of which that
  // many start); `fault` gets the run once trigger_'s trace has trigger_steps_
  // steps. Returns the chief's stderr; `read` gets each shard's ids as the
  // steps read them.
  std::string Run(const std::string& profile_extra,
                  const std::function<void(launch::LocalRun&)>& fault,
                  ShardIds* read) {
    const std::string trace = dir_.Join("trace");
    std::filesystem::create_directories(trace);
    StatusOr<std::string> path = testing::WriteExampleJob(
        "titanic", dir_,
        {{"shuffle_buffer = 1000", "shuffle_buffer = 0"},
         {"epochs = 20", StrCat("epochs = ", epochs_)},
         {"batch_size = 32", StrCat("batch_size = ", kBatch)},
         {"log_every_steps = 10",
          StrCat("log_every_steps = 100\nheartbeat_timeout = 1\nmode = \"",
                 mode_, "\"\n", train_extra_)},
         {"[[schema.columns]]\nname = \"Ticket\"",
          "[[schema.columns]]\nname = \"PassengerId\"\ntype = \"int\"\n"
          "default = -1\n\n[[schema.columns]]\nname = \"Ticket\""},
         {"[[features.numeric]]\nname = \"Age\"",
          "[[features.numeric]]\nname = \"PassengerId\"\n\n"
          "[[features.numeric]]\nname = \"Age\""}});
    EXPECT_TRUE(path.ok()) << path.status();
    if (!path.ok()) return "";
    StatusOr<JobFile> job = testing::LoadJobWithRecords(*path);
    EXPECT_TRUE(job.ok()) << job.status();
    if (!job.ok()) return "";
    job_ = *std::move(job);
    StatusOr<launch::PlanRequest> request = dtf::testing::LocalRunRequest(
        *path, dir_.Join("runs"),
        StrCat("backend = \"local\"\nps = 1\nworkers = ", launch_workers_,
               "\nmax_workers = ", kWorkers, "\n", profile_extra,
               "host = \"127.0.0.1\"\nthreads = 1\n[env]\n"
               "DTF_TEST_INPUT_TRACE = \"PassengerId@",
               trace, "\"\n"));
    EXPECT_TRUE(request.ok()) << request.status();
    if (!request.ok()) return "";
    // As dtf launch has it from the job (restarts need checkpoints).
    request->job_checkpoint_every_steps = job_.train.checkpoint_every_steps;
    const std::string watched = StrCat(trace, "/", trigger_, ".trace");
    dtf::testing::FaultedRun done = dtf::testing::RunWithFault(
        *request, [&] { return StepsIn(watched) >= trigger_steps_; }, fault);
    if (done.run == nullptr) return "";
    EXPECT_TRUE(done.faulted)
        << trigger_ << " never stepped " << trigger_steps_ << " times";
    const launch::LocalRun& r = *done.run;
    for (int w = 0; w < kWorkers; ++w) {
      ReadTrace(StrCat(trace, "/worker-", w, ".trace"), w, read, nullptr);
    }
    worker2_err_ = dtf::testing::ReadFile(r.plan().tasks[3].stderr_file);
    chief_err_ = dtf::testing::ReadFile(r.plan().chief().stderr_file);
    return chief_err_;
  }

  // Every example of every shard read; shard 2 read again by at most
  // `again` batches (what it had read but not pushed when it was lost),
  // the others never.
  void ExpectEveryExampleRead(const ShardIds& read, int again) {
    for (int s = 0; s < kWorkers; ++s) {
      const std::vector<int64_t> want =
          testing::ShardIds(job_, "PassengerId", s, kWorkers, epochs_);
      const auto it = read.find(s);
      const std::vector<int64_t> got =
          it == read.end() ? std::vector<int64_t>{} : it->second;
      std::map<int64_t, int> wanted, seen;
      for (const int64_t id : want) ++wanted[id];
      for (const int64_t id : got) ++seen[id];
      int unread = 0;
      for (const auto& [id, n] : wanted) {
        if (seen[id] < n) unread += n - seen[id];
      }
      EXPECT_EQ(unread, 0) << "shard " << s << ": examples never read";
      const int64_t twice = int64_t(got.size()) - int64_t(want.size());
      EXPECT_GE(twice, 0) << "shard " << s;
      EXPECT_LE(twice, s == 2 ? again * kBatch : 0)
          << "shard " << s << " read again; the chief said:\n"
          << ShardNotes(chief_err_) << "worker 2 said:\n"
          << ShardNotes(worker2_err_);
      if (s == 2) ::testing::Test::RecordProperty("read_twice", int(twice));
    }
  }

  dtf::testing::TempDir dir_{"dtf_elastic_input_test"};
  JobFile job_;
  std::string mode_ = "sync";
  int epochs_ = 150;
  // The workers started at launch (the rest of kWorkers reserved).
  int launch_workers_ = kWorkers;
  // More of the job's [train] table.
  std::string train_extra_;
  // The worker whose 20th step sets off the fault.
  std::string trigger_ = "worker-2";
  int trigger_steps_ = 20;
  // Worker 2's and the chief's stderr, once Run returned.
  std::string worker2_err_;
  std::string chief_err_;
};

class ElasticInputTest : public ElasticInputRun,
                         public ::testing::WithParamInterface<std::string> {
 protected:
  ElasticInputTest() { mode_ = GetParam(); }
};

// Worker 2 of 3 killed after some steps; no restarts, min_workers = 2.
TEST_P(ElasticInputTest, ALostWorkersShardIsReadOnByALiveOne) {
  ShardIds read;
  const std::string chief_err = Run(
      "min_workers = 2\nmax_restarts = 0\n",
      [](launch::LocalRun& r) {
        ASSERT_EQ(::kill(r.process(3).pid, SIGKILL), 0);
      },
      &read);
  EXPECT_THAT(chief_err, HasSubstr("worker:2's input shard is read on by"));
  ExpectEveryExampleRead(read, 4);
}

// Worker 2 of 3 killed mid-run and restarted alone (max_restarts): the
// parameter servers went on, so it reads on from the position they
// committed with its last batch their variables hold, not from the last
// checkpoint's (which would train the batches between twice). No
// periodic checkpoint comes before the kill (restarts need a cadence; this
// one is past the run's end), so the two always differ, whenever the kill
// lands.
TEST_P(ElasticInputTest, AWorkerRestartedAloneReadsOnFromItsCommittedPosition) {
  train_extra_ = "checkpoint_every_steps = 1000000";
  trigger_steps_ = 230;
  ShardIds read;
  Run(
      "max_restarts = 1\n",
      [](launch::LocalRun& r) {
        ASSERT_EQ(::kill(r.process(3).pid, SIGKILL), 0);
      },
      &read);
  EXPECT_THAT(worker2_err_, HasSubstr("the parameter servers committed"));
  // What worker 2 had read but not pushed when it was killed.
  ExpectEveryExampleRead(read, 4);
}

// Worker 2 stopped (SIGSTOP) for longer than heartbeat_timeout, then
// continued: its shard was handed on meanwhile; back, it reads none, and
// the worker that took it releases it to worker 2, which reads on from
// where that one stopped.
// A sync run, long enough that the shard is not read to its end before
// worker 2 is back (an async run steps too fast for that on titanic).
TEST_F(ElasticInputRun, AWorkerBackFromASilenceGetsItsShardBack) {
  epochs_ = 400;
  ShardIds read;
  const std::string chief_err = Run(
      "",
      [](launch::LocalRun& r) {
        const pid_t pid = r.process(3).pid;
        ASSERT_EQ(::kill(pid, SIGSTOP), 0);
        std::this_thread::sleep_for(1800ms);
        ASSERT_EQ(::kill(pid, SIGCONT), 0);
      },
      &read);
  EXPECT_THAT(chief_err, HasSubstr("worker:2's input shard is read on by"));
  EXPECT_THAT(chief_err, HasSubstr("releases worker:2's input shard to "
                                   "worker:2"));
  EXPECT_THAT(chief_err, HasSubstr("(released by worker:"));
  // The batches worker 2 had read when it stopped (the step's, the next
  // one, one being read: up to 3) are read on by the worker that took its
  // shard, and trained by worker 2 too once it continues.
  ExpectEveryExampleRead(read, 4);
}

// 2 of 3 worker slots started (max_workers = 3): the reserved slot's shard
// is read by the running workers from the start; `dtf scale` (Run::Scale)
// starts worker 2 mid-run, which gets its shard released to it and steps.
// Every example is read, none twice: a release is exact.
TEST_F(ElasticInputRun, AWorkerAddedMidRunTakesAShareOfTheInput) {
  launch_workers_ = 2;
  trigger_ = "worker-1";
  trigger_steps_ = 300;
  // Long enough that worker 2's start (a process loading the job) comes
  // well before the end.
  epochs_ = 500;
  ShardIds read;
  const std::string chief_err = Run(
      "", [](launch::LocalRun& r) { ASSERT_TRUE(r.Scale(3).ok()); }, &read);
  EXPECT_THAT(chief_err, HasSubstr("worker:2's input shard (a reserved slot, "
                                   "not started) is read by worker:"));
  EXPECT_THAT(chief_err, HasSubstr("releases worker:2's input shard to "
                                   "worker:2"));
  const std::string worker2 = dir_.Join("trace/worker-2.trace");
  EXPECT_GT(StepsIn(worker2), 0) << "worker 2 never stepped:\n" << worker2_err_;
  ExpectEveryExampleRead(read, 0);
}

INSTANTIATE_TEST_SUITE_P(Modes, ElasticInputTest,
                         ::testing::Values("sync", "async"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace dtf::runtime
