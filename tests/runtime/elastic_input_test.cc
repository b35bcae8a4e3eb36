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
#include "tests/runtime/runtime_testing.h"
#include "tests/testing/paths.h"
#include "tests/testing/temp_dir.h"

namespace dtf::runtime {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kWorkers = 3;
constexpr int kEpochs = 60;
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

// The ids shard `s` holds over the job's epochs.
std::vector<int64_t> ShardOf(const JobFile& job, int s) {
  std::vector<int64_t> ids;
  StatusOr<JobRecords> records = FindJobRecords(job);
  EXPECT_TRUE(records.ok()) << records.status();
  if (!records.ok()) return ids;
  InputPipelineOptions o;
  o.files = records->train;
  o.features = {FixedLenFeature("PassengerId", FeatureType::kInt64)};
  o.reader_index = s;
  o.reader_count = kWorkers;
  o.epochs = kEpochs;
  o.batch_size = kBatch;
  StatusOr<std::unique_ptr<InputPipeline>> input = InputPipeline::Create(o);
  EXPECT_TRUE(input.ok()) << input.status();
  if (!input.ok()) return ids;
  Batch batch;
  while (true) {
    StatusOr<bool> more = (*input)->Next(&batch);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) break;
    const Column* c = batch.Find("PassengerId");
    for (int64_t r = 0; r < batch.rows; ++r) ids.push_back(c->int64s[r]);
  }
  return ids;
}

class ElasticInputTest : public ::testing::TestWithParam<std::string> {};

// Worker 2 of 3 killed after some steps; no restarts, min_workers = 2.
TEST_P(ElasticInputTest, ALostWorkersShardIsReadOnByALiveOne) {
  dtf::testing::TempDir dir("dtf_elastic_input_test");
  const std::string trace = dir.Join("trace");
  std::filesystem::create_directories(trace);
  StatusOr<std::string> path = testing::WriteExampleJob(
      "titanic", dir,
      {{"shuffle_buffer = 1000", "shuffle_buffer = 0"},
       {"epochs = 20", StrCat("epochs = ", kEpochs)},
       {"batch_size = 32", StrCat("batch_size = ", kBatch)},
       {"log_every_steps = 10",
        StrCat("log_every_steps = 100\nheartbeat_timeout = 1\nmode = \"",
               GetParam(), "\"")},
       {"[[schema.columns]]\nname = \"Ticket\"",
        "[[schema.columns]]\nname = \"PassengerId\"\ntype = \"int\"\n"
        "default = -1\n\n[[schema.columns]]\nname = \"Ticket\""},
       {"[[features.numeric]]\nname = \"Age\"",
        "[[features.numeric]]\nname = \"PassengerId\"\n\n"
        "[[features.numeric]]\nname = \"Age\""}});
  ASSERT_TRUE(path.ok()) << path.status();
  StatusOr<JobFile> job = testing::LoadJobWithRecords(*path);
  ASSERT_TRUE(job.ok()) << job.status();
  StatusOr<launch::Profile> profile = launch::ParseProfile(
      StrCat("backend = \"local\"\nps = 1\nworkers = ", kWorkers,
             "\nmin_workers = 2\nmax_restarts = 0\nhost = \"127.0.0.1\"\n"
             "threads = 1\n[env]\nDTF_TEST_INPUT_TRACE = \"PassengerId@",
             trace, "\"\n"),
      "test profile", "local");
  ASSERT_TRUE(profile.ok()) << profile.status();
  launch::PlanRequest request;
  request.job = *path;
  request.binary = DTF_BINARY;
  request.runs_dir = dir.Join("runs");
  request.profile = *profile;
  std::vector<std::string> notes;
  launch::RunOptions options;
  options.grace = 5s;
  options.on_note = [&](std::string_view n) { notes.emplace_back(n); };
  const auto start = Clock::now();
  StatusOr<std::unique_ptr<launch::LocalRun>> run =
      launch::LocalRun::Start(request, options);
  ASSERT_TRUE(run.ok()) << run.status();
  launch::LocalRun& r = **run;
  const std::string lost = trace + "/worker-2.trace";
  bool killed = false;
  while (!r.Poll()) {
    if (!killed && StepsIn(lost) >= 40) {
      ASSERT_EQ(::kill(r.process(3).pid, SIGKILL), 0);
      killed = true;
    }
    if (Clock::now() - start > 240s) {
      r.Stop(DeadlineExceededError("the run hangs"));
      break;
    }
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(killed) << "worker:2 never stepped 40 times";
  const launch::RunOutcome outcome = r.outcome();
  std::string all_notes;
  for (const std::string& n : notes) StrAppend(&all_notes, n, "\n");
  const std::string chief_err =
      dtf::testing::ReadFile(r.plan().chief().stderr_file);
  ASSERT_TRUE(outcome.status.ok()) << outcome.status << "\n" << all_notes;
  EXPECT_THAT(chief_err, HasSubstr("worker:2's input shard is read on by"));

  ShardIds read;
  for (int w = 0; w < kWorkers; ++w) {
    ReadTrace(StrCat(trace, "/worker-", w, ".trace"), w, &read, nullptr);
  }
  for (int s = 0; s < kWorkers; ++s) {
    const std::vector<int64_t> want = ShardOf(*job, s);
    std::map<int64_t, int> wanted, seen;
    for (const int64_t id : want) ++wanted[id];
    for (const int64_t id : read[s]) ++seen[id];
    int unread = 0;
    for (const auto& [id, n] : wanted) {
      if (seen[id] < n) unread += n - seen[id];
    }
    EXPECT_EQ(unread, 0) << "shard " << s << ": examples never read";
    const int64_t twice = int64_t(read[s].size()) - int64_t(want.size());
    if (s != 2) {
      EXPECT_EQ(twice, 0) << "shard " << s;
    } else {
      // What worker 2 had read but not pushed when it was killed, and
      // what it pushed after the position the chief last saw: a few
      // batches at most.
      EXPECT_GE(twice, 0);
      ::testing::Test::RecordProperty("read_twice", int(twice));
      EXPECT_LE(twice, 4 * kBatch) << "shard 2 read again";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, ElasticInputTest,
                         ::testing::Values("sync", "async"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace dtf::runtime
