// Distributed training with every task a thread of this process, talking
// gRPC over loopback: parameter servers, workers and the chief as `dtf
// serve` runs them.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/data/record_reader.h"
#include "lib/runtime/checkpoint/bundle.h"
#include "lib/runtime/checkpoint/checkpoint.h"
#include "lib/runtime/checkpoint/checkpoint_files.h"
#include "lib/runtime/export/exported_model.h"
#include "lib/runtime/model/optimizers.h"
#include "lib/runtime/ps/ps_client.h"
#include "lib/runtime/serve/serve.h"
#include "lib/runtime/train/evaluator.h"
#include "lib/runtime/train/job_records.h"
#include "proto/event.pb.h"
#include "tests/runtime/date_text_jobs.h"
#include "tests/runtime/runtime_testing.h"
#include "tests/testing/reset_proxy.h"

namespace dtf::runtime {
namespace {

using testing::HeldPort;
using testing::LoadJobWithRecords;
using testing::WriteExampleJob;
using Clock = std::chrono::steady_clock;

constexpr char kSecret[] = "00112233445566778899aabbccddeeff";

// Every task's address, each port held (HeldPort) for as long as the
// cluster lives.
struct Cluster {
  std::vector<std::string> ps, workers;
  std::vector<HeldPort> held;
};

Cluster MakeCluster(int ps, int workers) {
  Cluster c;
  for (int i = 0; i < ps + workers; ++i) {
    c.held.emplace_back();
    EXPECT_GT(c.held.back().port(), 0) << "no loopback port to hold";
    (i < ps ? c.ps : c.workers).push_back(c.held.back().address());
  }
  return c;
}

ServeOptions Options(const Cluster& c, Role role, int index) {
  ServeOptions o;
  o.role = role;
  o.index = index;
  o.ps = c.ps;
  o.workers = c.workers;
  o.credentials.run_id = "test-run";
  o.credentials.secret = kSecret;
  o.threads = 1;
  return o;
}

// Runs every task of `c` as a thread; returns each task's result, PS first.
// Worker i stops when worker_cancel[i] (if given and not null) is set,
// every PS when *ps_cancel (if not null) is. A
// run still going after `limit` fails the test, and every task is
// cancelled: a hang fails rather than blocks.
std::vector<StatusOr<TrainResult>> RunCluster(
    const JobFile& job, const Cluster& c,
    std::vector<const std::atomic<bool>*> worker_cancel = {},
    std::chrono::seconds limit = std::chrono::seconds(900),
    const std::atomic<bool>* ps_cancel = nullptr) {
  const size_t n = c.ps.size() + c.workers.size();
  worker_cancel.resize(c.workers.size(), nullptr);
  std::vector<StatusOr<TrainResult>> results(n, InternalError("not run"));
  std::vector<std::atomic<bool>> cancel(n);
  std::atomic<bool> over{false};
  std::thread watchdog([&] {
    const auto deadline = Clock::now() + limit;
    while (!over) {
      for (size_t i = 0; i < c.workers.size(); ++i) {
        if (worker_cancel[i] != nullptr && worker_cancel[i]->load()) {
          cancel[c.ps.size() + i] = true;
        }
      }
      if (ps_cancel != nullptr && ps_cancel->load()) {
        for (size_t i = 0; i < c.ps.size(); ++i) cancel[i] = true;
      }
      if (Clock::now() >= deadline) {
        ADD_FAILURE() << "the cluster still runs " << limit.count()
                      << " s after it started; cancelling every task";
        for (std::atomic<bool>& flag : cancel) flag = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  std::vector<std::thread> threads;
  for (size_t i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      const bool ps = i < c.ps.size();
      ServeOptions o = Options(c, ps ? Role::kPs : Role::kWorker,
                               ps ? int(i) : int(i - c.ps.size()));
      o.cancel = &cancel[i];
      results[i] = Serve(job, o);
    });
  }
  for (std::thread& t : threads) t.join();
  over = true;
  watchdog.join();
  return results;
}

class DistributedTest : public ::testing::Test {
 protected:
  JobFile Job(
      std::string_view example,
      std::initializer_list<std::pair<std::string_view, std::string_view>>
          edits = {}) {
    StatusOr<std::string> path = WriteExampleJob(example, dir_, edits);
    EXPECT_TRUE(path.ok()) << path.status();
    StatusOr<JobFile> job = LoadJobWithRecords(*path);
    EXPECT_TRUE(job.ok()) << job.status();
    return *std::move(job);
  }
  dtf::testing::TempDir dir_;
};

TEST_F(DistributedTest, CensusSyncTwoPsTwoWorkersReachesTheGoal) {
  JobFile job = Job("census");
  const Cluster c = MakeCluster(2, 2);
  auto results = RunCluster(job, c);
  for (size_t i = 0; i < results.size(); ++i) {
    ASSERT_TRUE(results[i].ok()) << "task " << i << ": " << results[i].status();
  }
  const TrainResult& chief = *results[2];
  ASSERT_TRUE(chief.eval.has_value());
  EXPECT_EQ(chief.eval->metrics.examples, 16281);
  EXPECT_GE(*chief.eval->metrics.Get("accuracy"), 0.85);
  // Both workers trained on their half of the data, every epoch.
  EXPECT_EQ(results[2]->examples + results[3]->examples, 32561 * 10);
  EXPECT_TRUE(std::filesystem::exists(chief.export_dir + "/variables.dtf"));

  // The chief's TensorBoard events hold the final evaluation.
  std::string events;
  for (const auto& e :
       std::filesystem::directory_iterator(job.train.output_dir)) {
    if (e.path().filename().string().starts_with("events.out.tfevents.")) {
      events = e.path().string();
    }
  }
  ASSERT_FALSE(events.empty());
  RecordReaderOptions ro;
  auto reader = RecordReader::Open(events, ro);
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::string record;
  tensorflow::Event event;
  double last_accuracy = -1;
  int64_t last_step = -1;
  while (*(*reader)->ReadRecord(&record)) {
    ASSERT_TRUE(event.ParseFromString(record));
    for (const auto& v : event.summary().value()) {
      if (v.tag() == "eval/accuracy") {
        last_accuracy = v.simple_value();
        last_step = event.step();
      }
    }
  }
  EXPECT_NEAR(last_accuracy, *chief.eval->metrics.Get("accuracy"), 1e-6);
  EXPECT_EQ(last_step, chief.eval->step);
}

TEST_F(DistributedTest, TitanicAsyncTrains) {
  JobFile job = Job("titanic");
  job.train.mode = TrainMode::kAsync;
  const Cluster c = MakeCluster(1, 2);
  auto results = RunCluster(job, c);
  for (auto& r : results) ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(results[1]->eval.has_value());
  EXPECT_GE(*results[1]->eval->metrics.Get("accuracy"), 0.75);
  // Async: one update per push, every push of both workers applied (no
  // max_staleness), however fast each went: the worker that finished last
  // got back the global step of every batch of both.
  const int64_t batch = job.train.batch_size;
  int64_t pushes = 0, last = 0;
  for (const size_t w : {size_t(1), size_t(2)}) {
    EXPECT_GT(results[w]->examples, 0) << "worker:" << w - 1;
    pushes += (results[w]->examples + batch - 1) / batch;
    last = std::max(last, results[w]->steps);
  }
  EXPECT_EQ(last, pushes);
  // The chief's export holds the TensorFlow SavedModel too.
  const std::string sm = results[1]->export_dir + "/saved_model";
  EXPECT_TRUE(std::filesystem::exists(sm + "/saved_model.pb"));
  EXPECT_TRUE(std::filesystem::exists(sm + "/variables/variables.index"));
  EXPECT_TRUE(
      std::filesystem::exists(sm + "/variables/variables.data-00000-of-00001"));
}

// Two runs into one output directory, one right after the other in one
// process (well within a second), each write an event file of their own;
// the second used to fail with "event file already exists".
TEST_F(DistributedTest, BackToBackRunsIntoOneOutputDirectoryBothWriteEvents) {
  JobFile job = Job("titanic");
  job.train.epochs = 1;
  job.train.steps = 1;
  for (int run = 0; run < 2; ++run) {
    auto results = RunCluster(job, MakeCluster(1, 1));
    for (auto& r : results) {
      ASSERT_TRUE(r.ok()) << "run " << run << ": " << r.status();
    }
  }
  int event_files = 0;
  for (const auto& e :
       std::filesystem::directory_iterator(job.train.output_dir)) {
    if (e.path().filename().string().starts_with("events.out.tfevents.")) {
      ++event_files;
    }
  }
  EXPECT_EQ(event_files, 2);
}

// Every checkpoint of a sync run is a consistent cut: each PS's shard at one
// global step; the generations beyond keep_checkpoints are gone.
TEST_F(DistributedTest, SyncCheckpointsAreAConsistentCutAcrossShards) {
  JobFile job = Job("titanic");
  job.train.epochs = 6;
  job.train.checkpoint_every_steps = 3;
  job.train.keep_checkpoints = 1000;
  const Cluster c = MakeCluster(2, 2);
  auto results = RunCluster(job, c);
  for (auto& r : results) ASSERT_TRUE(r.ok()) << r.status();
  const std::vector<CheckpointGeneration> generations =
      ListCheckpointGenerations(job.train.output_dir);
  ASSERT_GE(generations.size(), 10u);
  for (const CheckpointGeneration& g : generations) {
    StatusOr<Bundle> bundle = Bundle::ReadFile(g.path);
    ASSERT_TRUE(bundle.ok()) << bundle.status();
    StatusOr<CheckpointInfo> info = ReadCheckpointInfo(*bundle);
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_EQ(info->run_id, "test-run");
    EXPECT_EQ(info->job_fingerprint, CheckpointFingerprint(job));
    ASSERT_EQ(info->ps_steps.size(), 2u) << g.path;
    EXPECT_EQ(info->ps_steps[0], info->ps_steps[1]) << g.path;
  }
}

// Every checkpoint of a distributed run records every worker's input
// position, committed with the variables it holds (each push carries its
// batch's position; the PS commits it with the step it is summed into): in
// sync mode exactly the checkpoint's step — worker:1 has as many steps in
// every checkpoint as its global step, never a heartbeat's worth more or
// less, however late its heartbeats come.
TEST_F(DistributedTest, CheckpointsRecordEveryWorkersInputPosition) {
  JobFile job =
      Job("titanic", {{"shuffle_buffer = 1000", "shuffle_buffer = 0"}});
  job.train.epochs = 6;
  // Every step waits for both workers.
  job.train.replicas_to_aggregate = 2;
  job.train.checkpoint_every_steps = 5;
  job.train.keep_checkpoints = 1000;
  const Cluster c = MakeCluster(1, 2);
  auto results = RunCluster(job, c);
  for (auto& r : results) ASSERT_TRUE(r.ok()) << r.status();
  // Each worker reads one of the 2 training files.
  const int64_t batch = job.train.batch_size;
  const int64_t share = results[2]->examples / job.train.epochs;
  ASSERT_EQ(share * job.train.epochs, results[2]->examples);
  std::vector<CheckpointGeneration> generations =
      ListCheckpointGenerations(job.train.output_dir);
  std::sort(generations.begin(), generations.end(),
            [](const auto& a, const auto& b) { return a.step < b.step; });
  ASSERT_GE(generations.size(), 8u);
  int64_t last_read = -1;
  for (const CheckpointGeneration& g : generations) {
    SCOPED_TRACE(g.path);
    StatusOr<Bundle> bundle = Bundle::ReadFile(g.path);
    ASSERT_TRUE(bundle.ok()) << bundle.status();
    StatusOr<CheckpointInfo> info = ReadCheckpointInfo(*bundle);
    ASSERT_TRUE(info.ok()) << info.status();
    ASSERT_EQ(info->worker_positions.size(), 2u);
    ASSERT_TRUE(info->worker_positions[0].has_value());
    EXPECT_EQ(*info->worker_positions[0], info->position);
    // Every step of a checkpoint holds a push of worker:1: its position
    // is committed in each.
    ASSERT_TRUE(info->worker_positions[1].has_value());
    const InputPosition& p = *info->worker_positions[1];
    // Batches run across epoch boundaries: every batch but the last is
    // whole.
    const int64_t read = p.epoch * share + p.epoch_record;
    const int64_t steps = (read + batch - 1) / batch;
    EXPECT_GE(read, last_read);
    last_read = read;
    if (g.step == generations.back().step) continue;  // the final one
    EXPECT_EQ(steps, info->global_step);
  }
  // The final checkpoint: worker:1 at its share's end but for its last
  // batch, whose sync step may still have waited for the chief's push.
  EXPECT_GE(last_read, share * job.train.epochs - batch);
}

// The date and text kinds train on parameter servers as in one process:
// the PS builds the same inputs (embeddings of the calendar parts and of
// the hashed terms) and the chief the same normalizer statistics.
TEST_F(DistributedTest, DateAndTextJobsTrainOnTwoWorkers) {
  for (const bool text : {true, false}) {
    SCOPED_TRACE(text ? "text" : "date");
    dtf::testing::TempDir dir;
    StatusOr<JobFile> job =
        LoadJobWithRecords(text ? testing::WriteReviewJob(dir, 3000)
                                : testing::WriteDateJob(dir, 3000));
    ASSERT_TRUE(job.ok()) << job.status();
    const Cluster c = MakeCluster(1, 2);
    auto results = RunCluster(*job, c);
    for (auto& r : results) ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_TRUE(results[1]->eval.has_value());
    EXPECT_GE(*results[1]->eval->metrics.Get("accuracy"), 0.9);
  }
}

// A worker that dies mid-run (stops without a word) never hangs a sync
// step: once it has been silent for heartbeat_timeout the others go on, and
// the run ends.
TEST_F(DistributedTest, ADeadWorkerDoesNotHangSyncSteps) {
  JobFile job = Job("titanic");
  job.train.heartbeat_timeout = 2;
  const Cluster c = MakeCluster(1, 3);
  std::atomic<bool> kill_worker2{false};
  // Worker 2 dies once the run is under way (global step 20 of about 200),
  // not after a fixed time: a fast machine could finish before a timer.
  std::thread killer([&] {
    PsClient watcher(c.ps, {"test-run", kSecret, ""}, -1,
                     std::chrono::seconds(5));
    for (int i = 0; i < 1200 && !watcher.Pull({}, {}, 20).ok(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    kill_worker2 = true;
  });
  auto results = RunCluster(job, c, {nullptr, nullptr, &kill_worker2},
                            std::chrono::seconds(120));
  killer.join();
  EXPECT_TRUE(results[0].ok()) << results[0].status();
  ASSERT_TRUE(results[1].ok()) << results[1].status();
  EXPECT_TRUE(results[1]->eval.has_value());
  EXPECT_EQ(results[3].status().code(), absl::StatusCode::kCancelled);
}

// A connection to a PS that breaks in the middle of the chief's pull after
// an evaluation (the PS killed mid-call, "Connection reset by peer") is
// waited out as a broken step is: every pull outside a step (evaluation,
// checkpoint, the next batch's rows after them) rejoins.
TEST_F(DistributedTest, AConnectionResetAfterAnEvaluationIsRejoined) {
  JobFile job = Job("titanic");
  job.train.eval_every_steps = 5;
  const Cluster c = MakeCluster(1, 1);
  dtf::testing::ResetProxy proxy(c.held[0].port());
  ASSERT_FALSE(proxy.address().empty()) << "the proxy could not listen";
  std::atomic<bool> cancel_ps{false}, cancel_chief{false};
  ServeOptions ps = Options(c, Role::kPs, 0);
  ps.cancel = &cancel_ps;
  ServeOptions chief = Options(c, Role::kWorker, 0);
  chief.ps = {proxy.address()};
  chief.cancel = &cancel_chief;
  std::mutex mu;
  std::string notes;
  chief.on_note = [&](std::string_view note) {
    std::lock_guard<std::mutex> lock(mu);
    StrAppend(&notes, note, "\n");
  };
  // The chief's first call after its first evaluation is cut.
  chief.on_eval = [&](const EvalReport&) {
    if (proxy.resets() == 0) proxy.Arm();
  };
  std::future<StatusOr<TrainResult>> ps_run =
      std::async(std::launch::async, [&] { return Serve(job, ps); });
  std::future<StatusOr<TrainResult>> chief_run =
      std::async(std::launch::async, [&] { return Serve(job, chief); });
  if (chief_run.wait_for(std::chrono::seconds(300)) !=
      std::future_status::ready) {
    ADD_FAILURE() << "the chief still runs 300 s after it started";
    cancel_chief = true;
  }
  StatusOr<TrainResult> result = chief_run.get();
  cancel_ps = true;  // whatever the chief did, the PS ends with the test
  StatusOr<TrainResult> ps_result = ps_run.get();
  EXPECT_EQ(proxy.resets(), 1);
  ASSERT_TRUE(result.ok()) << result.status() << "\nnotes:\n" << notes;
  EXPECT_TRUE(result->eval.has_value());
  EXPECT_TRUE(ps_result.ok()) << ps_result.status();
  EXPECT_NE(notes.find("every parameter server answers again"),
            std::string::npos)
      << notes;
}

// A PS that stops answering for longer than ps_timeout (its host stalled,
// the connection open) is waited out as a lost one is: the call in flight
// ends DeadlineExceeded, and the chief pulls again until every PS answers,
// then trains on to the end.
TEST_F(DistributedTest, APsThatStopsAnsweringForAWhileIsWaitedOut) {
  JobFile job = Job("titanic");
  job.train.eval_every_steps = 5;
  job.train.heartbeat_timeout = 1;
  job.train.ps_timeout = 2;
  const Cluster c = MakeCluster(1, 1);
  dtf::testing::ResetProxy proxy(c.held[0].port());
  ASSERT_FALSE(proxy.address().empty()) << "the proxy could not listen";
  std::atomic<bool> cancel_ps{false}, cancel_chief{false};
  ServeOptions ps = Options(c, Role::kPs, 0);
  ps.cancel = &cancel_ps;
  ServeOptions chief = Options(c, Role::kWorker, 0);
  chief.ps = {proxy.address()};
  chief.cancel = &cancel_chief;
  std::mutex mu;
  std::string notes;
  chief.on_note = [&](std::string_view note) {
    std::lock_guard<std::mutex> lock(mu);
    StrAppend(&notes, note, "\n");
  };
  // After the first evaluation, for 2.5 times ps_timeout.
  std::atomic<bool> stalled{false};
  chief.on_eval = [&](const EvalReport&) {
    if (!stalled.exchange(true)) proxy.Stall(std::chrono::milliseconds(5000));
  };
  std::future<StatusOr<TrainResult>> ps_run =
      std::async(std::launch::async, [&] { return Serve(job, ps); });
  std::future<StatusOr<TrainResult>> chief_run =
      std::async(std::launch::async, [&] { return Serve(job, chief); });
  if (chief_run.wait_for(std::chrono::seconds(300)) !=
      std::future_status::ready) {
    ADD_FAILURE() << "the chief still runs 300 s after it started";
    cancel_chief = true;
  }
  StatusOr<TrainResult> result = chief_run.get();
  cancel_ps = true;  // whatever the chief did, the PS ends with the test
  StatusOr<TrainResult> ps_result = ps_run.get();
  EXPECT_TRUE(stalled);
  ASSERT_TRUE(result.ok()) << result.status() << "\nnotes:\n" << notes;
  EXPECT_TRUE(result->eval.has_value());
  EXPECT_THAT(notes, ::testing::HasSubstr("Deadline Exceeded"));
  EXPECT_THAT(notes,
              ::testing::HasSubstr("every parameter server answers again"));
}

// SIGTERM cuts a call in flight short: the chief of a sync run whose
// other worker never came waits in its first step (for heartbeat_timeout,
// 60 s here); stopped, it ends at once, writing its checkpoint.
TEST_F(DistributedTest, AStoppedWorkerEndsItsCallInFlightAtOnce) {
  JobFile job = Job("titanic");
  job.train.mode = TrainMode::kSync;
  job.train.heartbeat_timeout = 60;
  job.train.ps_timeout = 120;
  const Cluster c = MakeCluster(1, 2);
  std::atomic<bool> cancel_ps{false}, cancel_chief{false};
  ServeOptions ps = Options(c, Role::kPs, 0);
  ps.cancel = &cancel_ps;
  ServeOptions chief = Options(c, Role::kWorker, 0);
  chief.cancel = &cancel_chief;
  std::future<StatusOr<TrainResult>> ps_run =
      std::async(std::launch::async, [&] { return Serve(job, ps); });
  std::future<StatusOr<TrainResult>> chief_run =
      std::async(std::launch::async, [&] { return Serve(job, chief); });
  // Well into the chief's first step, which waits for worker:1.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const auto stopped_at = Clock::now();
  cancel_chief = true;
  if (chief_run.wait_for(std::chrono::seconds(100)) !=
      std::future_status::ready) {
    ADD_FAILURE() << "the chief still runs 100 s after it was stopped";
  }
  StatusOr<TrainResult> result = chief_run.get();
  const auto took = Clock::now() - stopped_at;
  cancel_ps = true;
  static_cast<void>(ps_run.get());  // cancelled: whatever it says
  ASSERT_EQ(result.status().code(), absl::StatusCode::kCancelled)
      << result.status();
  EXPECT_THAT(std::string(Message(result.status())),
              ::testing::HasSubstr("worker:0: stopped at step 0; checkpoint"));
  // Within the launcher's 10 s grace, far from the 60 s the step waits.
  EXPECT_LT(took, std::chrono::seconds(10));
}

// Early stopping on the chief ends the whole run as running out of data
// does: the other worker stops, the PS exits, every task succeeds, and the
// export is the best evaluation's model (checkpoint-best.dtf).
TEST_F(DistributedTest, EarlyStoppingOnTheChiefEndsTheRun) {
  // min_delta 10: only the first evaluation improves the loss, and the
  // third (local step 30) stops training, long before 10 epochs.
  JobFile job = Job("census", {{"[train]\n",
                                "[train]\neval_every_steps = 10\n"
                                "early_stopping = { patience = 2, "
                                "min_delta = 10.0 }\n"}});
  const Cluster c = MakeCluster(1, 2);
  auto results = RunCluster(job, c, {}, std::chrono::seconds(300));
  for (size_t i = 0; i < results.size(); ++i) {
    ASSERT_TRUE(results[i].ok()) << "task " << i << ": " << results[i].status();
  }
  const TrainResult& chief = *results[1];
  EXPECT_TRUE(chief.stopped_early);
  EXPECT_EQ(chief.examples, 30 * 256);
  // The other worker heard it within a heartbeat or two and stopped short
  // of its 10 epochs (of 636 steps).
  EXPECT_LT(results[2]->examples, 32561 * 10 / 2);
  ASSERT_TRUE(chief.best_eval.has_value());
  EXPECT_EQ(chief.best_metric, "loss");
  EXPECT_LE(chief.best_eval->step, 20);  // the first evaluation
  ASSERT_TRUE(chief.eval.has_value());
  EXPECT_GT(chief.eval->step, chief.best_eval->step);
  EXPECT_TRUE(std::filesystem::exists(chief.best_checkpoint));

  StatusOr<LoadedModel> exported = LoadExportedModel(chief.export_dir);
  ASSERT_TRUE(exported.ok()) << exported.status();
  StatusOr<JobRecords> records = FindJobRecords(job);
  ASSERT_TRUE(records.ok()) << records.status();
  StatusOr<EvalMetrics> again =
      Evaluate(kernels::Context::Cpu(0), exported->layer, *exported->model,
               records->eval, 1024);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_NEAR(*again->Get("loss"), *chief.best_eval->metrics.Get("loss"), 1e-6);
  EXPECT_NE(*again->Get("loss"), *chief.eval->metrics.Get("loss"));
}

// Ctrl-C mid-run (SIGTERM to every task, the PS's arriving first): the PS
// serves on while the chief pulls and writes its checkpoint, then the chief
// sends it home; the checkpoint restores.
TEST_F(DistributedTest, ACancelledChiefWritesItsCheckpoint) {
  JobFile job = Job("census");
  const Cluster c = MakeCluster(1, 1);
  std::atomic<bool> cancel_ps{false}, cancel_chief{false};
  Clock::time_point cancelled_at;
  // Once the run is under way (global step 20 of about 1300).
  std::thread canceller([&] {
    PsClient watcher(c.ps, {"test-run", kSecret, ""}, -1,
                     std::chrono::seconds(5));
    for (int i = 0; i < 1200 && !watcher.Pull({}, {}, 20).ok(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    cancelled_at = Clock::now();
    cancel_ps = true;
    // Longer than a PS takes to notice (200 ms).
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    cancel_chief = true;
  });
  auto results = RunCluster(job, c, {&cancel_chief}, std::chrono::seconds(120),
                            &cancel_ps);
  canceller.join();
  // The chief sent the PS home before its 10 s grace ran out.
  EXPECT_LT(Clock::now() - cancelled_at, std::chrono::seconds(8));
  EXPECT_EQ(results[0].status().code(), absl::StatusCode::kCancelled)
      << results[0].status();
  const Status& st = results[1].status();
  ASSERT_EQ(st.code(), absl::StatusCode::kCancelled) << st;
  const std::string checkpoint =
      (std::filesystem::path(job.train.output_dir) / kCheckpointFile).string();
  EXPECT_NE(Message(st).find("checkpoint " + checkpoint), std::string::npos)
      << st;
  StatusOr<Bundle> bundle = Bundle::ReadFile(checkpoint);
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  StatusOr<std::vector<int64_t>> step = bundle->GetInt64s("train/global_step");
  ASSERT_TRUE(step.ok() && step->size() == 1);
  EXPECT_GE((*step)[0], 20);

  // It restores into the job's model, optimizer slots included.
  StatusOr<FeatureLayer> layer =
      FeatureLayer::Create(job.schema, job.features, *job.model);
  ASSERT_TRUE(layer.ok()) << layer.status();
  StatusOr<std::unique_ptr<Model>> model =
      Model::Create(*layer, *job.model, uint64_t(job.train.seed));
  ASSERT_TRUE(model.ok()) << model.status();
  StatusOr<Optimizers> optimizers = MakeOptimizers(job.train);
  ASSERT_TRUE(optimizers.ok()) << optimizers.status();
  std::vector<kernels::OptimizerState> states((*model)->variables().size());
  for (size_t i = 0; i < states.size(); ++i) {
    const Variable& v = (*model)->variables()[i];
    if (v.trainable) {
      states[i] = optimizers->For(v.part).CreateState(v.value.shape());
    }
  }
  TrainState state;
  Status restored =
      RestoreCheckpoint(*bundle, &*layer, model->get(), &states, &state);
  EXPECT_TRUE(restored.ok()) << restored;
  EXPECT_EQ(state.global_step, (*step)[0]);
}

// A restarted PS restores only its own run's checkpoint: one that an
// earlier run left in the output directory (there at global step 3125) is
// not restored, and the PS starts from the initial values.
TEST_F(DistributedTest, ARestartedPsDoesNotRestoreAnotherRunsCheckpoint) {
  JobFile job = Job("titanic");
  const Cluster c = MakeCluster(1, 1);
  std::filesystem::create_directories(job.train.output_dir);
  Bundle old;
  old.AddString(std::string(kCheckpointRunIdEntry), "an-earlier-run");
  old.AddString(std::string(kCheckpointFingerprintEntry),
                CheckpointFingerprint(job));
  old.AddInt64s("train/global_step", std::vector<int64_t>{3125});
  old.AddInt64s("train/input_position", std::vector<int64_t>{0, 0, 0, 0});
  // Every variable and slot as the job's model has them, so that the old
  // checkpoint would restore if it were taken.
  StatusOr<FeatureLayer> layer =
      FeatureLayer::Create(job.schema, job.features, *job.model);
  ASSERT_TRUE(layer.ok()) << layer.status();
  StatusOr<std::unique_ptr<Model>> model =
      Model::Create(*layer, *job.model, uint64_t(job.train.seed));
  ASSERT_TRUE(model.ok()) << model.status();
  StatusOr<Optimizers> optimizers = MakeOptimizers(job.train);
  ASSERT_TRUE(optimizers.ok()) << optimizers.status();
  std::vector<kernels::OptimizerState> states((*model)->variables().size());
  for (size_t i = 0; i < states.size(); ++i) {
    const Variable& v = (*model)->variables()[i];
    if (v.trainable) {
      states[i] = optimizers->For(v.part).CreateState(v.value.shape());
    }
  }
  TrainState state;
  state.global_step = 3125;
  ASSERT_TRUE(MakeCheckpoint(*layer, **model, states, state, "",
                             {"an-earlier-run", CheckpointFingerprint(job)})
                  .WriteFile((std::filesystem::path(job.train.output_dir) /
                              kCheckpointFile)
                                 .string())
                  .ok());

  std::atomic<bool> cancel{false};
  ServeOptions o = Options(c, Role::kPs, 0);
  o.restore = true;
  o.cancel = &cancel;
  std::vector<std::string> notes;
  std::mutex notes_mu;
  o.on_note = [&](std::string_view text) {
    std::lock_guard<std::mutex> lock(notes_mu);
    notes.emplace_back(text);
  };
  std::future<StatusOr<TrainResult>> ps =
      std::async(std::launch::async, [&] { return Serve(job, o); });
  PsClient client(c.ps, {"test-run", kSecret, JobFingerprint(job)}, -1,
                  std::chrono::seconds(5));
  Status pulled = UnavailableError("not tried");
  for (int i = 0; i < 100 && !pulled.ok(); ++i) {
    pulled = client.Pull({}, {}, 0);
    if (!pulled.ok())
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // Sent home as the chief would (a cancel would serve on for 10 s).
  Status sent = client.Shutdown("the test is over");
  if (!sent.ok()) cancel = true;
  StatusOr<TrainResult> r = ps.get();
  EXPECT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(pulled.ok()) << pulled;
  EXPECT_EQ(client.steps()[0], 0) << "the PS restored another run's checkpoint";
  std::lock_guard<std::mutex> lock(notes_mu);
  bool said = false;
  for (const std::string& n : notes) {
    if (n.find("belongs to run an-earlier-run, not to run test-run") !=
        std::string::npos) {
      said = true;
    }
  }
  EXPECT_TRUE(said) << "no note says why the checkpoint was not restored";
}

// A restarted PS whose run's checkpoint is corrupt stops with an error
// naming the file, and leaves the file as it is.
TEST_F(DistributedTest, ARestartedPsRefusesATamperedCheckpoint) {
  JobFile job = Job("titanic");
  const Cluster c = MakeCluster(1, 1);
  std::filesystem::create_directories(job.train.output_dir);
  const std::string path =
      (std::filesystem::path(job.train.output_dir) / kCheckpointFile).string();
  Bundle b;
  b.AddString(std::string(kCheckpointRunIdEntry), "test-run");
  b.AddInt64s("train/global_step", std::vector<int64_t>{10});
  ASSERT_TRUE(b.WriteFile(path).ok());
  std::string bytes = dtf::testing::ReadFile(path);
  bytes[bytes.size() / 2] ^= 0x20;
  dtf::testing::WriteFile(path, bytes);
  ServeOptions o = Options(c, Role::kPs, 0);
  o.restore = true;
  StatusOr<TrainResult> r = Serve(job, o);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
  EXPECT_NE(Message(r.status()).find(path), std::string::npos) << r.status();
  EXPECT_EQ(dtf::testing::ReadFile(path), bytes);
}

// No PS is ever left running: without its chief it exits on its own.
TEST_F(DistributedTest, APsWithoutItsChiefExits) {
  JobFile job = Job("titanic");
  job.train.coordinator_timeout = 2;
  const Cluster c = MakeCluster(1, 1);
  std::atomic<bool> cancel{false};
  ServeOptions o = Options(c, Role::kPs, 0);
  o.cancel = &cancel;
  std::future<StatusOr<TrainResult>> ps =
      std::async(std::launch::async, [&] { return Serve(job, o); });
  // It gives up after coordinator_timeout (2 s); a PS still there after
  // 60 s would run on for ever.
  if (ps.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    ADD_FAILURE() << "the PS still runs 60 s without its chief";
    cancel = true;
  }
  StatusOr<TrainResult> r = ps.get();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  EXPECT_NE(Message(r.status()).find("unreachable"), std::string::npos)
      << r.status();
}

// Interrupted after its chief died (the launcher stops the rest of a run
// whose chief was killed), a PS has no checkpoint pull to wait for: it
// exits at once instead of serving on for its 10 s and being killed at the
// end of the launcher's grace period.
TEST_F(DistributedTest, AnInterruptedPsWhoseChiefIsGoneExitsAtOnce) {
  JobFile job = Job("titanic");
  // Its chief's port is held but not served, so every heartbeat fails at
  // once; the PS must not give up on it for that meanwhile.
  job.train.coordinator_timeout = 600;
  const Cluster c = MakeCluster(1, 1);
  std::mutex mu;
  std::string notes;
  std::atomic<bool> cancel{false};
  ServeOptions o = Options(c, Role::kPs, 0);
  o.ready_file = dir_.Join("ps-0.ready");
  o.cancel = &cancel;
  o.on_note = [&](std::string_view note) {
    std::lock_guard<std::mutex> lock(mu);
    StrAppend(&notes, note, "\n");
  };
  std::future<StatusOr<TrainResult>> ps =
      std::async(std::launch::async, [&] { return Serve(job, o); });
  struct CancelOnExit {
    std::atomic<bool>* flag;
    ~CancelOnExit() { *flag = true; }
  } cancel_on_exit{&cancel};
  for (auto deadline = Clock::now() + std::chrono::seconds(60);
       !std::filesystem::exists(o.ready_file) && Clock::now() < deadline &&
       ps.wait_for(std::chrono::milliseconds(20)) !=
           std::future_status::ready;) {
  }
  ASSERT_TRUE(std::filesystem::exists(o.ready_file))
      << "the PS did not listen within 60 s";
  // Two heartbeat periods: its calls to the chief have failed by now.
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  const Clock::time_point cancelled_at = Clock::now();
  cancel = true;
  ASSERT_EQ(ps.wait_for(std::chrono::seconds(60)), std::future_status::ready)
      << "the PS still runs 60 s after it was interrupted";
  const auto took = Clock::now() - cancelled_at;
  StatusOr<TrainResult> r = ps.get();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();
  // Well inside the 10 s it serves on for a chief that answers.
  EXPECT_LT(took, std::chrono::seconds(3));
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_NE(notes.find("does not answer; exiting"), std::string::npos) << notes;
}

// The addresses listening on TCP `port`, from /proc/net/tcp and tcp6 as
// `ss -ltn` reads them: "127.0.0.2" (an IPv4 address, or one mapped into
// an IPv6 socket), "0.0.0.0", "::" (every interface).
std::vector<std::string> ListeningOn(int port) {
  std::vector<std::string> found;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state;
      fields >> slot >> local >> remote >> state;
      if (state != "0A") continue;  // TCP_LISTEN
      const size_t colon = local.find(':');
      if (std::stoi(local.substr(colon + 1), nullptr, 16) != port) continue;
      const std::string hex = local.substr(0, colon);
      // IPv6: four 32-bit words; v4-mapped ones end in 0000FFFF, then the
      // IPv4 address.
      if (hex.size() == 32 && hex.substr(0, 24) != "0000000000000000FFFF0000") {
        found.push_back(hex == std::string(32, '0') ? "::" : "ipv6:" + hex);
        continue;
      }
      const uint32_t raw =
          uint32_t(std::stoul(hex.substr(hex.size() - 8), nullptr, 16));
      found.push_back(StrCat(raw & 0xff, ".", (raw >> 8) & 0xff, ".",
                             (raw >> 16) & 0xff, ".", raw >> 24));
    }
  }
  return found;
}

// Each task listens on the address its plan gave it, not on every
// interface: a PS given 127.0.0.2 is not reachable on 127.0.0.1.
TEST_F(DistributedTest, ATaskListensOnItsOwnAddressOnly) {
  JobFile job = Job("titanic");
  Cluster c = MakeCluster(1, 1);
  const int port = c.held[0].port();
  c.ps[0] = StrCat("127.0.0.2:", port);
  std::atomic<bool> cancel_ps{false};
  ServeOptions ps = Options(c, Role::kPs, 0);
  ps.cancel = &cancel_ps;
  std::future<StatusOr<TrainResult>> ps_run =
      std::async(std::launch::async, [&] { return Serve(job, ps); });
  std::vector<std::string> listening;
  for (int i = 0; i < 100 && listening.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    listening = ListeningOn(port);
  }
  cancel_ps = true;
  StatusOr<TrainResult> ended = ps_run.get();
  EXPECT_EQ(listening, std::vector<std::string>{"127.0.0.2"}) << ended.status();
}

// Calls without the run's secret are refused, and change nothing: the PS
// serves on until a call with the secret ends it.
TEST_F(DistributedTest, CallsWithoutTheSecretAreRefused) {
  JobFile job = Job("titanic");
  // No chief in this test: the PS must not give up on it meanwhile.
  job.train.coordinator_timeout = 600;
  const Cluster c = MakeCluster(1, 1);
  std::mutex mu;
  std::string notes;
  std::atomic<bool> cancel{false};
  ServeOptions o = Options(c, Role::kPs, 0);
  o.ready_file = dir_.Join("ps-0.ready");
  o.cancel = &cancel;
  o.on_note = [&](std::string_view note) {
    std::lock_guard<std::mutex> lock(mu);
    StrAppend(&notes, note, "\n");
  };
  std::future<StatusOr<TrainResult>> ps =
      std::async(std::launch::async, [&] { return Serve(job, o); });
  // Whatever fails below, the PS ends before the test does.
  struct CancelOnExit {
    std::atomic<bool>* flag;
    ~CancelOnExit() { *flag = true; }
  } cancel_on_exit{&cancel};
  // Once the PS listens (its ready file), or it has ended.
  for (auto deadline = Clock::now() + std::chrono::seconds(60);
       !std::filesystem::exists(o.ready_file) && Clock::now() < deadline &&
       ps.wait_for(std::chrono::milliseconds(20)) !=
           std::future_status::ready;) {
  }
  ASSERT_TRUE(std::filesystem::exists(o.ready_file))
      << "the PS did not listen within 60 s";

  RunCredentials wrong{"test-run", "ffffffffffffffffffffffffffffffff", ""};
  PsClient client(c.ps, wrong, 0, std::chrono::seconds(30));
  // Refused on their metadata, before a handler runs or a message of theirs
  // is parsed (the auth metadata processor of a loopback server).
  Status st = client.Pull({}, {}, 0);
  EXPECT_EQ(st.code(), absl::StatusCode::kUnauthenticated) << st;
  EXPECT_NE(Message(st).find("wrong run id or secret"), std::string::npos)
      << st;
  st = client.Shutdown("a stranger's shutdown");
  EXPECT_EQ(st.code(), absl::StatusCode::kUnauthenticated) << st;

  RunCredentials right{"test-run", kSecret, ""};
  PsClient good(c.ps, right, 0, std::chrono::seconds(30));
  EXPECT_TRUE(good.Shutdown("test over").ok());
  ASSERT_EQ(ps.wait_for(std::chrono::seconds(60)), std::future_status::ready)
      << "the PS still runs 60 s after its shutdown";
  StatusOr<TrainResult> r = ps.get();
  EXPECT_TRUE(r.ok()) << r.status();
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_NE(notes.find("ps:0: exiting (test over)"), std::string::npos)
      << notes;
}

}  // namespace
}  // namespace dtf::runtime
