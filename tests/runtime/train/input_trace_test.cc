// Exactly once per batch across a restart of every task: each worker's
// input position is committed with the checkpoint it belongs to, so that a
// run stopped and restored from its checkpoint reads on from there. Every
// task is a thread of this process on loopback gRPC; the input trace
// (lib/runtime/train/input_trace.h) lists the passenger ids each worker's
// steps read, and the test counts them: the steps of the checkpoint's
// variables in the stopped run, then every step of the restored one, make
// up each worker's share of every epoch exactly once.
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/data/input_pipeline.h"
#include "lib/runtime/checkpoint/bundle.h"
#include "lib/runtime/checkpoint/checkpoint_files.h"
#include "lib/runtime/ps/ps_client.h"
#include "lib/runtime/serve/serve.h"
#include "lib/runtime/train/job_records.h"
#include "tests/runtime/runtime_testing.h"
#include "tests/runtime/train/shard_ids.h"

namespace dtf::runtime {
namespace {

using testing::HeldPort;
using testing::LoadJobWithRecords;
using testing::WriteExampleJob;
using Clock = std::chrono::steady_clock;

constexpr char kSecret[] = "00112233445566778899aabbccddeeff";
constexpr int kWorkers = 2;
constexpr int64_t kEpochs = 3;
// The run is stopped once the chief reports this global step, past the
// checkpoint of step 20 (checkpoint_every_steps = 5).
constexpr int64_t kStopAt = 23;

// One step's line of a trace: the input shard its batch is of, the global
// step its gradients were computed at, the input position after its
// batch, the ids it read.
struct TraceStep {
  int shard = 0;
  int64_t step = 0;
  InputPosition after;
  std::vector<int64_t> ids;
};
// A worker's trace: the steps of each run (one a "start" line).
using Trace = std::vector<std::vector<TraceStep>>;

// Worker `worker`'s trace: "step" lines read its own shard, "take <shard>"
// lines another.
Trace ReadTrace(const std::string& path, int worker) {
  Trace runs;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string kind;
    TraceStep s;
    words >> kind;
    s.shard = worker;
    if (kind == "take") words >> s.shard;
    words >> s.step >> s.after.epoch >> s.after.file >> s.after.record >>
        s.after.epoch_record >> s.after.emitted;
    if (kind == "start") {
      runs.emplace_back();
      continue;
    }
    if (runs.empty() || (kind != "step" && kind != "take")) break;
    for (int64_t id; words >> id;) s.ids.push_back(id);
    runs.back().push_back(std::move(s));
  }
  return runs;
}

// How each task's run ended, for a failure's message.
std::string Statuses(const std::vector<StatusOr<TrainResult>>& results) {
  std::string out;
  for (const StatusOr<TrainResult>& r : results) {
    StrAppend(
        &out, "\n  ",
        r.ok() ? StrCat("ok, ", r->steps, " steps") : r.status().ToString());
  }
  return out;
}

class InputTraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    trace_dir_ = (std::filesystem::path(dir_.path()) / "trace").string();
    std::filesystem::create_directories(trace_dir_);
    setenv("DTF_TEST_INPUT_TRACE", StrCat("PassengerId@", trace_dir_).c_str(),
           1);
  }
  void TearDown() override { unsetenv("DTF_TEST_INPUT_TRACE"); }

  // Titanic through a shuffle buffer of `shuffle` records (0: in file
  // order), a checkpoint every 5 steps. The passenger id is a column of
  // the records but no feature of the model: the trace has the workers
  // parse it beside the features.
  JobFile Job(std::string_view train, int shuffle = 0) {
    StatusOr<std::string> path = WriteExampleJob(
        "titanic", dir_,
        {{"shuffle_buffer = 1000", StrCat("shuffle_buffer = ", shuffle)},
         {"[[schema.columns]]\nname = \"Ticket\"",
          "[[schema.columns]]\nname = \"PassengerId\"\ntype = \"int\"\n"
          "default = -1\n\n[[schema.columns]]\nname = \"Ticket\""},
         {"[train]\n", StrCat("[train]\n", train)}});
    EXPECT_TRUE(path.ok()) << path.status();
    StatusOr<JobFile> job = LoadJobWithRecords(*path);
    EXPECT_TRUE(job.ok()) << job.status();
    job->train.epochs = kEpochs;
    job->train.log_every_steps = 1;
    job->train.checkpoint_every_steps = 5;
    job->train.coordinator_timeout = 3;
    job->train.ps_timeout = 3;
    return *std::move(job);
  }

  // Runs `ps` parameter servers and workers_ worker slots as threads (the
  // workers of `members` alone when given: an allreduce run at another
  // size), each restoring when `restore`. `stop`, when given, is polled: once
  // true the parameter servers are sent home and every task is cancelled (a
  // loss of every task: with parameter servers the workers' calls in flight
  // fail, and the run is restored from its last periodic checkpoint). A
  // run still going after 120 s fails the test.
  std::vector<StatusOr<TrainResult>> RunTasks(
      const JobFile& job, int ps, bool restore, std::atomic<bool>* stop,
      const std::vector<int>& members = {}) {
    std::vector<HeldPort> held(size_t(ps + workers_));
    std::vector<std::string> ps_addr, workers;
    for (int i = 0; i < ps + workers_; ++i) {
      (i < ps ? ps_addr : workers).push_back(held[size_t(i)].address());
    }
    std::vector<StatusOr<TrainResult>> results(held.size(),
                                               InternalError("not run"));
    std::atomic<bool> cancel_ps{false}, cancel_workers{false};
    const auto takes_part = [&](int i) {
      return i < ps || members.empty() ||
             std::find(members.begin(), members.end(), i - ps) != members.end();
    };
    int tasks = 0;
    for (int i = 0; i < ps + workers_; ++i) tasks += takes_part(i) ? 1 : 0;
    std::atomic<int> running{tasks};
    std::thread watchdog([&] {
      const auto deadline = Clock::now() + std::chrono::seconds(120);
      while (running > 0) {
        if (stop != nullptr && *stop && !cancel_ps) {
          // The parameter servers go at once: every later push and pull
          // fails, the workers end with it, no checkpoint is written
          // after (a cancelled PS would serve on for the chief's).
          if (ps > 0) {
            PsClient client(ps_addr, {"test-run", kSecret, ""}, -1,
                            std::chrono::seconds(5));
            EXPECT_TRUE(client.Shutdown("every task stops").ok());
          }
          cancel_ps = true;
          cancel_workers = true;
        }
        if (Clock::now() >= deadline) {
          ADD_FAILURE() << "the run still goes 120 s after it started";
          cancel_ps = cancel_workers = true;
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    });
    std::vector<std::thread> threads;
    for (int i = 0; i < ps + workers_; ++i) {
      if (!takes_part(i)) {
        results[size_t(i)] = TrainResult{};
        continue;
      }
      threads.emplace_back([&, i] {
        ServeOptions o;
        o.role = i < ps ? Role::kPs : Role::kWorker;
        o.index = i < ps ? i : i - ps;
        o.ps = ps_addr;
        o.workers = workers;
        o.credentials.run_id = "test-run";
        o.credentials.secret = kSecret;
        o.threads = 1;
        o.restore = restore;
        o.members = members;
        o.cancel = i < ps ? &cancel_ps : &cancel_workers;
        if (i == ps && stop != nullptr) {
          o.on_progress = [stop, ps, &cancel_workers](const TrainProgress& p) {
            if (p.step < kStopAt || stop->exchange(true)) return;
            // The rest of the run (steps of under a millisecond) could end
            // before the stop is seen: the chief's step waits here until
            // the watchdog above (every 10 ms) and the task's own watcher
            // (every 50 ms) have acted. Without parameter servers the
            // workers' cancel is the stop.
            if (ps == 0) cancel_workers = true;
            std::this_thread::sleep_for(std::chrono::seconds(1));
          };
        }
        results[size_t(i)] = Serve(job, o);
        --running;
      });
    }
    for (std::thread& t : threads) t.join();
    watchdog.join();
    return results;
  }

  // Stops a run of `job` past step kStopAt, restores every task from its
  // checkpoint and counts what was read of each input shard. An allreduce
  // run may take `before` and `after` as its members in the two runs (at
  // another size: the shards of the slots not taking part are read by
  // those that do).
  void StopRestoreAndCount(const JobFile& job, int ps,
                           const std::vector<int>& before = {},
                           const std::vector<int>& after = {}) {
    std::atomic<bool> stop{false};
    const auto stopped = RunTasks(job, ps, /*restore=*/false, &stop, before);
    ASSERT_TRUE(stop) << "the first run ended before step " << kStopAt << ": "
                      << Statuses(stopped);
    // Stopped mid-run: the chief did not finish.
    ASSERT_FALSE(stopped[size_t(ps)].ok())
        << "the chief ran on to step " << stopped[size_t(ps)]->steps;
    std::vector<CheckpointGeneration> generations =
        ListCheckpointGenerations(job.train.output_dir);
    ASSERT_FALSE(generations.empty());
    const CheckpointGeneration last = *std::max_element(
        generations.begin(), generations.end(),
        [](const auto& a, const auto& b) { return a.step < b.step; });
    StatusOr<Bundle> bundle = Bundle::ReadFile(last.path);
    ASSERT_TRUE(bundle.ok()) << bundle.status();
    StatusOr<CheckpointInfo> info = ReadCheckpointInfo(*bundle);
    ASSERT_TRUE(info.ok()) << info.status();
    const int64_t at = info->global_step;
    ASSERT_GE(at, 20);
    ASSERT_EQ(info->worker_positions.size(), size_t(workers_));

    auto results = RunTasks(job, ps, /*restore=*/true, nullptr, after);
    for (size_t i = 0; i < results.size(); ++i) {
      ASSERT_TRUE(results[i].ok())
          << "task " << i << ": " << results[i].status();
    }
    // Each shard's steps: the stopped run's in the checkpoint (those
    // computed before its step), then the restored run's.
    const auto in = [](const std::vector<int>& members, int w) {
      return members.empty() ||
             std::find(members.begin(), members.end(), w) != members.end();
    };
    const size_t shards = size_t(workers_);
    std::vector<std::vector<TraceStep>> first(shards), second(shards);
    for (int w = 0; w < workers_; ++w) {
      const Trace runs = ReadTrace(
          (std::filesystem::path(trace_dir_) / StrCat("worker-", w, ".trace"))
              .string(),
          w);
      const size_t want = size_t(in(before, w)) + size_t(in(after, w));
      ASSERT_EQ(runs.size(), want) << "worker:" << w << "'s runs";
      if (in(before, w)) {
        for (const TraceStep& s : runs[0]) {
          if (s.step < at) first[size_t(s.shard)].push_back(s);
        }
      }
      if (in(after, w)) {
        for (const TraceStep& s : runs.back()) {
          second[size_t(s.shard)].push_back(s);
        }
      }
    }
    for (int shard = 0; shard < workers_; ++shard) {
      SCOPED_TRACE(StrCat("input shard ", shard, ", checkpoint of step ", at));
      std::vector<int64_t> seen;
      InputPosition kept;
      for (const TraceStep& s : first[size_t(shard)]) {
        seen.insert(seen.end(), s.ids.begin(), s.ids.end());
        kept = s.after;
      }
      const std::optional<InputPosition>& recorded =
          info->worker_positions[size_t(shard)];
      ASSERT_TRUE(recorded.has_value());
      EXPECT_EQ(*recorded, kept)
          << "recorded: epoch " << recorded->epoch << " record "
          << recorded->epoch_record << "; the steps before " << at
          << " end at epoch " << kept.epoch << " record " << kept.epoch_record;
      for (const TraceStep& s : second[size_t(shard)]) {
        seen.insert(seen.end(), s.ids.begin(), s.ids.end());
      }
      // Every id of the shard, each epoch, exactly once, in order (as many
      // times as the shard holds it: a record's shard may differ from one
      // epoch to the next where readers take records by index).
      const std::vector<int64_t> share =
          testing::ShardIds(job, "PassengerId", shard, workers_, kEpochs);
      ASSERT_FALSE(share.empty());
      std::map<int64_t, int> counts;
      for (const int64_t id : share) ++counts[id];
      for (const int64_t id : seen) --counts[id];
      int off = 0;
      for (const auto& [id, n] : counts) off += n != 0;
      EXPECT_EQ(off, 0) << "ids read more or fewer times than the shard has "
                           "them";
      EXPECT_EQ(seen.size(), share.size());
      EXPECT_TRUE(seen == share) << "the ids read are not the share in order";
    }
  }

  // The run's worker slots.
  int workers_ = kWorkers;
  dtf::testing::TempDir dir_;
  std::string trace_dir_;
};

TEST_F(InputTraceTest, SyncParameterServersReadEachExampleOnceAcrossARestart) {
  JobFile job = Job("");
  job.train.mode = TrainMode::kSync;
  job.train.replicas_to_aggregate = kWorkers;
  StopRestoreAndCount(job, /*ps=*/1);
}

TEST_F(InputTraceTest, AllreduceReadsEachExampleOnceAcrossARestart) {
  JobFile job = Job("mode = \"allreduce\"\ndevice = \"cpu\"\n");
  StopRestoreAndCount(job, /*ps=*/0);
}

// Through a shuffle buffer larger than a batch: the records that sat in
// it at the checkpoint are read after the restart as they would have been.
TEST_F(InputTraceTest, ShuffledSyncReadsEachExampleOnceAcrossARestart) {
  JobFile job = Job("", /*shuffle=*/200);
  job.train.mode = TrainMode::kSync;
  job.train.replicas_to_aggregate = kWorkers;
  StopRestoreAndCount(job, /*ps=*/1);
}

TEST_F(InputTraceTest, ShuffledAllreduceReadsEachExampleOnceAcrossARestart) {
  JobFile job = Job("mode = \"allreduce\"\ndevice = \"cpu\"\n",
                    /*shuffle=*/200);
  StopRestoreAndCount(job, /*ps=*/0);
}

// An allreduce run of 3 worker slots restored at 2 ranks (worker 1 lost):
// worker 2 reads worker 1's shard beside its own, each from the position
// the checkpoint recorded, and steps alone once the chief's shard has
// ended; no example is skipped or read twice.
TEST_F(InputTraceTest, AllreduceRestoredWithFewerWorkersReadsEachExampleOnce) {
  workers_ = 3;
  JobFile job = Job("mode = \"allreduce\"\ndevice = \"cpu\"\n",
                    /*shuffle=*/200);
  StopRestoreAndCount(job, /*ps=*/0, {}, {0, 2});
}

// Started with 2 of 3 slots (the third's shard read by worker 1), then
// restored with all 3: worker 2 reads its own shard on from where worker 1
// left it.
TEST_F(InputTraceTest, AllreduceRestoredWithMoreWorkersReadsEachExampleOnce) {
  workers_ = 3;
  JobFile job = Job("mode = \"allreduce\"\ndevice = \"cpu\"\n",
                    /*shuffle=*/200);
  StopRestoreAndCount(job, /*ps=*/0, {0, 1}, {});
}

}  // namespace
}  // namespace dtf::runtime
