// mode = "allreduce" on CPUs: every worker a thread of this process, the
// gradients averaged over Gloo (loopback TCP), the ranks meeting through
// the chief's Coordinator over loopback gRPC.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/runtime/serve/serve.h"
#include "lib/runtime/train/task_threads.h"
#include "lib/runtime/train/trainer.h"
#include "tests/runtime/runtime_testing.h"

namespace dtf::runtime {
namespace {

using testing::HeldPort;
using testing::LoadJobWithRecords;
using testing::WriteExampleJob;
using namespace std::chrono_literals;

constexpr char kSecret[] = "00112233445566778899aabbccddeeff";

// Runs `n` workers of `job` as threads; returns each one's result. A run
// still going after `limit` fails the test and is cancelled.
// `threads`: each worker's --threads (0: the job's train.threads); `notes`,
// when given, gets every worker's notes.
std::vector<StatusOr<TrainResult>> RunWorkers(
    const JobFile& job, int n, std::chrono::seconds limit,
    int compute_threads = 1, std::vector<std::string>* notes = nullptr) {
  std::mutex notes_mu;
  std::vector<HeldPort> ports(static_cast<size_t>(n));
  std::vector<std::string> workers;
  for (const HeldPort& p : ports) workers.push_back(p.address());
  std::vector<StatusOr<TrainResult>> results(static_cast<size_t>(n),
                                             InternalError("not run"));
  std::atomic<bool> cancel{false};
  std::atomic<int> running{n};
  std::thread watchdog([&] {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (running > 0) {
      if (std::chrono::steady_clock::now() >= deadline) {
        ADD_FAILURE() << "the run still goes " << limit.count()
                      << " s after it started; cancelling it";
        cancel = true;
        break;
      }
      std::this_thread::sleep_for(20ms);
    }
  });
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      ServeOptions o;
      o.role = Role::kWorker;
      o.index = i;
      o.workers = workers;
      o.credentials.run_id = "test-run";
      o.credentials.secret = kSecret;
      o.threads = compute_threads;
      o.cancel = &cancel;
      if (notes != nullptr) {
        o.on_note = [&](std::string_view note) {
          std::lock_guard<std::mutex> lock(notes_mu);
          notes->emplace_back(note);
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

class AllreduceCpuTest : public ::testing::Test {
 protected:
  JobFile Job(
      std::string_view example,
      std::initializer_list<std::pair<std::string_view, std::string_view>>
          edits) {
    StatusOr<std::string> path = WriteExampleJob(example, dir_, edits);
    EXPECT_TRUE(path.ok()) << path.status();
    StatusOr<JobFile> job = LoadJobWithRecords(*path);
    EXPECT_TRUE(job.ok()) << job.status();
    return *std::move(job);
  }
  dtf::testing::TempDir dir_;
};

constexpr char kAllreduceCpu[] =
    "[train]\nmode = \"allreduce\"\ndevice = \"cpu\"\n";

// Titanic on two CPU workers reaches what one process (`dtf train`)
// reaches on the same data.
TEST_F(AllreduceCpuTest, TitanicTwoWorkersReachWhatOneProcessReaches) {
  JobFile job = Job("titanic", {{"[train]\n", kAllreduceCpu}});
  ASSERT_EQ(job.train.mode, TrainMode::kAllreduce);
  StatusOr<TrainResult> one = Train(job, TrainOptions{});
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_TRUE(one->eval.has_value());
  const double one_accuracy = *one->eval->metrics.Get("accuracy");

  std::vector<StatusOr<TrainResult>> results = RunWorkers(job, 2, 300s);
  for (size_t i = 0; i < results.size(); ++i) {
    ASSERT_TRUE(results[i].ok())
        << "worker " << i << ": " << results[i].status();
  }
  const TrainResult& chief = *results[0];
  ASSERT_TRUE(chief.eval.has_value());
  const double accuracy = *chief.eval->metrics.Get("accuracy");
  EXPECT_GE(accuracy, 0.75);
  EXPECT_GE(accuracy, one_accuracy - 0.03) << "one process: " << one_accuracy;
  // Each trained on its half; the run ends for both when the first runs
  // out, so the other's last batches may go untrained.
  EXPECT_GT(results[1]->examples, 0);
  EXPECT_LE(results[0]->examples + results[1]->examples, one->examples);
  EXPECT_GE(results[0]->examples + results[1]->examples,
            one->examples * 9 / 10);
  EXPECT_TRUE(std::filesystem::exists(chief.export_dir + "/variables.dtf"));
}

// A launched worker gets --threads 0 unless the profile sets threads: it
// then computes with the job's train.threads, as a PS-mode worker does.
TEST_F(AllreduceCpuTest, WorkersComputeWithTheJobsThreads) {
  JobFile job =
      Job("titanic", {{"[train]\n", StrCat(kAllreduceCpu, "threads = 5\n")}});
  ASSERT_EQ(job.train.threads, 5);
  std::vector<std::string> notes;
  std::vector<StatusOr<TrainResult>> results =
      RunWorkers(job, 2, 300s, /*threads=*/0, &notes);
  for (size_t i = 0; i < results.size(); ++i) {
    ASSERT_TRUE(results[i].ok())
        << "worker " << i << ": " << results[i].status();
  }
  EXPECT_THAT(notes, ::testing::Contains(::testing::HasSubstr(
                         "worker:0: joined the Gloo collective as rank 0 of 2 "
                         "(5 compute threads)")));
  EXPECT_THAT(notes, ::testing::Contains(::testing::HasSubstr(
                         "worker:1: joined the Gloo collective as rank 1 of 2 "
                         "(5 compute threads)")));
}

// The chief's early stopping reaches the other rank in the vote that rides
// on the next step's gradients: both stop at the same global step, neither
// applying that step, and the chief exports its best model.
TEST_F(AllreduceCpuTest, EarlyStoppingStopsEveryRankAtOneStep) {
  JobFile job =
      Job("titanic",
          {{"[train]\n", StrCat(kAllreduceCpu,
                                "early_stopping = { patience = 2, min_delta = "
                                "10.0 }\neval_every_steps = 5\n")}});
  std::vector<StatusOr<TrainResult>> results = RunWorkers(job, 2, 300s);
  for (size_t i = 0; i < results.size(); ++i) {
    ASSERT_TRUE(results[i].ok())
        << "worker " << i << ": " << results[i].status();
  }
  const TrainResult& chief = *results[0];
  EXPECT_TRUE(chief.stopped_early);
  // Evaluated at steps 5, 10 and 15; the third is the second without
  // progress.
  EXPECT_EQ(chief.steps, 15);
  EXPECT_EQ(results[1]->steps, 15);
  ASSERT_TRUE(chief.best_eval.has_value());
  EXPECT_EQ(chief.best_eval->step, 5);
  EXPECT_TRUE(std::filesystem::exists(chief.best_checkpoint));
}

// With threads set nowhere, the two workers on this host share its CPUs.
TEST_F(AllreduceCpuTest, WorkersShareTheHostsCpusByDefault) {
  JobFile job = Job("titanic", {{"[train]\n", kAllreduceCpu}});
  ASSERT_EQ(job.train.threads, 0);
  std::vector<std::string> notes;
  std::vector<StatusOr<TrainResult>> results =
      RunWorkers(job, 2, 300s, /*compute_threads=*/0, &notes);
  ASSERT_TRUE(results[0].ok()) << results[0].status();
  const HostCpus cpus = ThisProcessCpus();
  const int want =
      cpus.usable < cpus.online ? cpus.usable : std::max(1, cpus.usable / 2);
  EXPECT_THAT(notes, ::testing::Contains(::testing::HasSubstr(StrCat(
                         "worker:0: joined the Gloo collective as rank 0 of 2 "
                         "(",
                         want, " compute thread"))));
}

// Without shuffling or dropout, one record file striped across the ranks:
// 2 ranks of batch B take, step by step, the examples one process takes in
// batches of 2B, and the mean of their gradients is its gradient. After K
// steps the models agree to float rounding.
TEST_F(AllreduceCpuTest, TwoRanksOfBatchBEqualOneProcessOfBatch2B) {
  JobFile job = Job("census", {{"shards = 4", "shards = 1"},
                               {"dropout = 0.1", "dropout = 0.0"},
                               {"epochs = 10", "steps = 40"},
                               {"shuffle_buffer = 10000", "shuffle_buffer = 0"},
                               {"batch_size = 256", "batch_size = 64"},
                               {"[train]\n", kAllreduceCpu}});
  TrainOptions single;
  single.batch_size = 128;
  StatusOr<TrainResult> one = Train(job, single);
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_TRUE(one->eval.has_value());
  ASSERT_EQ(one->steps, 40);

  std::vector<StatusOr<TrainResult>> results = RunWorkers(job, 2, 300s);
  for (size_t i = 0; i < results.size(); ++i) {
    ASSERT_TRUE(results[i].ok())
        << "worker " << i << ": " << results[i].status();
  }
  const TrainResult& chief = *results[0];
  ASSERT_TRUE(chief.eval.has_value());
  EXPECT_EQ(chief.steps, 40);
  const double want = *one->eval->metrics.Get("loss");
  const double got = *chief.eval->metrics.Get("loss");
  EXPECT_NEAR(got, want, 1e-4 * std::abs(want)) << "one process: " << want;
  EXPECT_NEAR(*chief.eval->metrics.Get("auc"), *one->eval->metrics.Get("auc"),
              1e-4);
}

// Each gradient bucket averaged on the communication thread as soon as the
// backward pass has finished it (train.overlap_communication, the default)
// leaves the same model, to the bit, as every bucket averaged after the
// whole backward pass: hidden layers of 512 make two buckets (the first at
// most 1 MiB), dropout and shuffling on.
TEST_F(AllreduceCpuTest, OverlappedBucketsLeaveTheSameModel) {
  std::vector<std::pair<std::string, std::string>> edits = {
      {"hidden = [100, 50]", "hidden = [512, 512]"},
      {"epochs = 10", "steps = 30"},
      {"batch_size = 256", "batch_size = 64"}};
  auto run = [&](bool overlap, std::vector<std::string>* notes) {
    const std::string train =
        StrCat(kAllreduceCpu,
               "overlap_communication = ", overlap ? "true" : "false", "\n");
    JobFile job = Job("census", {{edits[0].first, edits[0].second},
                                 {edits[1].first, edits[1].second},
                                 {edits[2].first, edits[2].second},
                                 {"[train]\n", train}});
    EXPECT_EQ(job.train.overlap_communication, overlap);
    std::vector<StatusOr<TrainResult>> results =
        RunWorkers(job, 2, 300s, 1, notes);
    for (size_t i = 0; i < results.size(); ++i) {
      EXPECT_TRUE(results[i].ok())
          << "worker " << i << ": " << results[i].status();
    }
    return results;
  };
  std::vector<std::string> notes;
  std::vector<StatusOr<TrainResult>> overlapped = run(true, &notes);
  std::vector<StatusOr<TrainResult>> after = run(false, nullptr);
  ASSERT_TRUE(overlapped[0].ok() && after[0].ok());
  EXPECT_THAT(notes, ::testing::Contains(::testing::HasSubstr(
                         "2 gradient buckets averaged during the backward "
                         "pass")));
  ASSERT_TRUE(overlapped[0]->eval.has_value());
  ASSERT_TRUE(after[0]->eval.has_value());
  EXPECT_EQ(overlapped[0]->steps, 30);
  EXPECT_EQ(after[0]->steps, 30);
  for (const char* metric : {"loss", "auc", "accuracy"}) {
    EXPECT_EQ(*overlapped[0]->eval->metrics.Get(metric),
              *after[0]->eval->metrics.Get(metric))
        << metric;
  }
  EXPECT_EQ(overlapped[0]->loss, after[0]->loss);
  EXPECT_EQ(overlapped[1]->loss, after[1]->loss);
}

// The census wide & deep model on 2 and 4 CPU workers reaches the
// accuracy of TensorFlow's official model.
class AllreduceCensusTest : public AllreduceCpuTest,
                            public ::testing::WithParamInterface<int> {};

TEST_P(AllreduceCensusTest, ReachesTheGoal) {
  const int n = GetParam();
  JobFile job = Job("census", {{"[train]\n", kAllreduceCpu}});
  std::vector<StatusOr<TrainResult>> results = RunWorkers(job, n, 600s);
  for (size_t i = 0; i < results.size(); ++i) {
    ASSERT_TRUE(results[i].ok())
        << "worker " << i << ": " << results[i].status();
  }
  const TrainResult& chief = *results[0];
  ASSERT_TRUE(chief.eval.has_value());
  EXPECT_EQ(chief.eval->metrics.examples, 16281);
  EXPECT_GE(*chief.eval->metrics.Get("accuracy"), 0.85);
  int64_t examples = 0;
  for (const auto& r : results) examples += r->examples;
  EXPECT_LE(examples, 32561 * 10);
  EXPECT_GE(examples, 32561 * 10 * 95 / 100);
}

INSTANTIATE_TEST_SUITE_P(Workers, AllreduceCensusTest, ::testing::Values(2, 4));

}  // namespace
}  // namespace dtf::runtime
