// Elastic workers in an allreduce run (docs/launch.md, *Elastic workers*):
// a worker lost while min_workers allows it, or workers added by `dtf
// scale`, restart every worker at the new size from the last checkpoint
// (as TorchElastic does). The input keeps one shard per worker slot; the
// shards of the slots not taking part are read by those that do. A real
// run of `dtf serve` processes on the local backend; the input trace
// (lib/runtime/train/input_trace.h) lists the passenger ids each step
// read, and the test counts them: leaving out the steps the restart rolled
// back (those at or past its checkpoint's step), every example of every
// shard is read exactly once.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/launch/local/local_backend.h"
#include "lib/runtime/train/job_records.h"
#include "tests/runtime/local_run_request.h"
#include "tests/runtime/runtime_testing.h"
#include "tests/runtime/train/shard_ids.h"
#include "tests/testing/paths.h"
#include "tests/testing/temp_dir.h"

namespace dtf::runtime {
namespace {

using ::testing::HasSubstr;

constexpr int kSlots = 3;
constexpr int kEpochs = 60;

// A step's line of a trace: its shard, global step and ids.
struct Line {
  int shard = 0;
  int64_t step = 0;
  std::vector<int64_t> ids;
};
// A worker's trace: one list of lines per process (a "start" line each),
// with the global step it started at.
struct Incarnation {
  int64_t start = 0;
  std::vector<Line> lines;
};

std::vector<Incarnation> ReadTrace(const std::string& path, int worker) {
  std::vector<Incarnation> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string kind;
    words >> kind;
    Line l;
    l.shard = worker;
    if (kind == "take") words >> l.shard;
    words >> l.step;
    if (kind == "start") {
      out.push_back({l.step, {}});
      continue;
    }
    if (out.empty() || (kind != "step" && kind != "take")) continue;
    int64_t n = 0;
    for (int i = 0; i < 5; ++i) words >> n;  // the position
    for (int64_t id; words >> id;) l.ids.push_back(id);
    out.back().lines.push_back(std::move(l));
  }
  return out;
}

// What the run's steps read of each shard, leaving out the steps a restart
// rolled back: a process's lines at or past the step the processes after
// it started at (its own next one, or for a worker left out, the first
// restart after its start).
using ShardIds = std::map<int, std::vector<int64_t>>;
void CountSteps(const std::vector<std::vector<Incarnation>>& traces,
                ShardIds* read) {
  std::vector<int64_t> restarts;
  for (const auto& trace : traces) {
    for (size_t k = 1; k < trace.size(); ++k) {
      restarts.push_back(trace[k].start);
    }
  }
  std::sort(restarts.begin(), restarts.end());
  for (const auto& trace : traces) {
    for (size_t k = 0; k < trace.size(); ++k) {
      int64_t until = INT64_MAX;
      if (k + 1 < trace.size()) {
        until = trace[k + 1].start;
      } else if (const auto later = std::upper_bound(
                     restarts.begin(), restarts.end(), trace[k].start);
                 later != restarts.end()) {
        until = *later;
      }
      for (const Line& l : trace[k].lines) {
        if (l.step >= until) continue;
        (*read)[l.shard].insert((*read)[l.shard].end(), l.ids.begin(),
                                l.ids.end());
      }
    }
  }
}

class ElasticAllreduceTest : public ::testing::Test {
 protected:
  // Runs titanic in allreduce mode on the local backend with kSlots worker
  // slots (`profile_extra` added to the profile); `fault` gets the run
  // once `trigger`'s trace has `steps` steps. Returns the chief's stderr.
  std::string Run(const std::string& profile_extra, const std::string& trigger,
                  int steps,
                  const std::function<void(launch::LocalRun&)>& fault,
                  ShardIds* read) {
    const std::string trace = dir_.Join("trace");
    std::filesystem::create_directories(trace);
    StatusOr<std::string> path = testing::WriteExampleJob(
        "titanic", dir_,
        {{"shuffle_buffer = 1000", "shuffle_buffer = 0"},
         {"epochs = 20", StrCat("epochs = ", kEpochs)},
         {"log_every_steps = 10",
          "log_every_steps = 100\ncheckpoint_every_steps = 100\n"
          "mode = \"allreduce\"\ndevice = \"cpu\"\ncollective_timeout = 5\n"
          "heartbeat_timeout = 2"},
         {"[[schema.columns]]\nname = \"Ticket\"",
          "[[schema.columns]]\nname = \"PassengerId\"\ntype = \"int\"\n"
          "default = -1\n\n[[schema.columns]]\nname = \"Ticket\""}});
    EXPECT_TRUE(path.ok()) << path.status();
    if (!path.ok()) return "";
    StatusOr<JobFile> job = testing::LoadJobWithRecords(*path);
    EXPECT_TRUE(job.ok()) << job.status();
    if (!job.ok()) return "";
    job_ = *std::move(job);
    StatusOr<launch::PlanRequest> request = dtf::testing::LocalRunRequest(
        *path, dir_.Join("runs"),
        StrCat("backend = \"local\"\n", profile_extra,
               "host = \"127.0.0.1\"\nthreads = 1\n[env]\n"
               "DTF_TEST_INPUT_TRACE = \"PassengerId@",
               trace, "\"\n"));
    EXPECT_TRUE(request.ok()) << request.status();
    if (!request.ok()) return "";
    request->allreduce = true;
    request->job_checkpoint_every_steps = job_.train.checkpoint_every_steps;
    const std::string watched = StrCat(trace, "/", trigger, ".trace");
    dtf::testing::FaultedRun done = dtf::testing::RunWithFault(
        *request,
        [&] {
          const std::vector<Incarnation> t = ReadTrace(watched, 0);
          return !t.empty() && int(t.back().lines.size()) >= steps;
        },
        fault);
    if (done.run == nullptr) return "";
    EXPECT_TRUE(done.faulted)
        << trigger << " never stepped " << steps << " times";
    notes_ = done.notes;
    const launch::LocalRun& r = *done.run;
    std::vector<std::vector<Incarnation>> traces;
    for (int w = 0; w < kSlots; ++w) {
      traces.push_back(ReadTrace(StrCat(trace, "/worker-", w, ".trace"), w));
    }
    CountSteps(traces, read);
    return dtf::testing::ReadFile(r.plan().chief().stderr_file);
  }

  // Every example of every shard read exactly once.
  void ExpectEachExampleOnce(const ShardIds& read) {
    for (int s = 0; s < kSlots; ++s) {
      SCOPED_TRACE(StrCat("input shard ", s));
      const std::vector<int64_t> want =
          testing::ShardIds(job_, "PassengerId", s, kSlots, kEpochs);
      ASSERT_FALSE(want.empty());
      std::map<int64_t, int> counts;
      for (const int64_t id : want) ++counts[id];
      const auto it = read.find(s);
      if (it != read.end()) {
        for (const int64_t id : it->second) --counts[id];
      }
      int never = 0, twice = 0;
      for (const auto& [id, n] : counts) {
        if (n > 0) never += n;
        if (n < 0) twice -= n;
      }
      EXPECT_EQ(never, 0) << "examples never read";
      EXPECT_EQ(twice, 0) << "examples read twice";
    }
  }

  dtf::testing::TempDir dir_{"dtf_elastic_allreduce_test"};
  JobFile job_;
  std::string notes_;
};

// Worker 1 of 3 killed mid-run; min_workers = 2 and no restarts: workers 0
// and 2 start again from the checkpoint the chief wrote as it stopped,
// worker 2 reading worker 1's shard beside its own.
TEST_F(ElasticAllreduceTest, ALostWorkerLeavesTheOthersAtTheNewSize) {
  ShardIds read;
  const std::string chief_err = Run(
      StrCat("workers = ", kSlots, "\nmin_workers = 2\nmax_restarts = 0\n"),
      "worker-1", 200,
      [](launch::LocalRun& r) {
        ASSERT_EQ(::kill(r.process(1).pid, SIGKILL), 0);
      },
      &read);
  EXPECT_THAT(notes_, HasSubstr("task worker:1 killed by SIGKILL; 2 workers "
                                "are left (min_workers = 2): every worker "
                                "starts again without it from the last "
                                "checkpoint, at 2 ranks (workers 0,2)"));
  EXPECT_THAT(chief_err, HasSubstr("joined the Gloo collective as rank 0 of "
                                   "2"));
  ExpectEachExampleOnce(read);
}

// 2 of 3 worker slots started (max_workers = 3), worker 1 reading the third
// slot's shard too; `dtf scale` (Run::Scale) restarts every worker with
// worker 2 among them, which reads its own shard on from where worker 1
// left it.
TEST_F(ElasticAllreduceTest, AWorkerAddedRestartsEveryWorkerAtTheNewSize) {
  ShardIds read;
  const std::string chief_err = Run(
      StrCat("workers = 2\nmax_workers = ", kSlots, "\n"), "worker-1", 200,
      [](launch::LocalRun& r) {
        const Status scaled = r.Scale(3);
        ASSERT_TRUE(scaled.ok()) << scaled;
      },
      &read);
  EXPECT_THAT(notes_, HasSubstr("dtf scale: every worker starts again from "
                                "the last checkpoint with worker:2, at 3 "
                                "ranks (workers 0,1,2)"));
  EXPECT_THAT(chief_err, HasSubstr("joined the Gloo collective as rank 0 of "
                                   "3"));
  ExpectEachExampleOnce(read);
}

}  // namespace
}  // namespace dtf::runtime
