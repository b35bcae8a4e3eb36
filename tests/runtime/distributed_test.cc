// Distributed training with every task a thread of this process, talking
// gRPC over loopback: parameter servers, workers and the chief as `dtf
// serve` runs them.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/data/record_reader.h"
#include "lib/runtime/ps_client.h"
#include "lib/runtime/serve.h"
#include "proto/event.pb.h"
#include "tests/runtime/runtime_testing.h"

namespace dtf::runtime {
namespace {

using testing::LoadJobWithRecords;
using testing::WriteExampleJob;
using Clock = std::chrono::steady_clock;

constexpr char kSecret[] = "00112233445566778899aabbccddeeff";

// `n` distinct ports nothing listens on now (bound together, read,
// released).
std::vector<int> FreePorts(int n) {
  std::vector<int> fds, ports;
  for (int i = 0; i < n; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    socklen_t len = sizeof(addr);
    getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    fds.push_back(fd);
    ports.push_back(ntohs(addr.sin_port));
  }
  for (int fd : fds) close(fd);
  return ports;
}

struct Cluster {
  std::vector<std::string> ps, workers;
};

Cluster MakeCluster(int ps, int workers) {
  Cluster c;
  std::vector<int> ports = FreePorts(ps + workers);
  for (int i = 0; i < ps; ++i) {
    c.ps.push_back(StrCat("127.0.0.1:", ports[size_t(i)]));
  }
  for (int i = 0; i < workers; ++i) {
    c.workers.push_back(StrCat("127.0.0.1:", ports[size_t(ps + i)]));
  }
  return c;
}

ServeOptions Options(const Cluster& c, TaskRole role, int index) {
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
std::vector<StatusOr<TrainResult>> RunCluster(
    const JobFile& job, const Cluster& c,
    std::vector<const std::atomic<bool>*> worker_cancel = {}) {
  const size_t n = c.ps.size() + c.workers.size();
  std::vector<StatusOr<TrainResult>> results(n, InternalError("not run"));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < c.ps.size(); ++i) {
    threads.emplace_back(
        [&, i] { results[i] = Serve(job, Options(c, TaskRole::kPs, int(i))); });
  }
  for (size_t i = 0; i < c.workers.size(); ++i) {
    threads.emplace_back([&, i] {
      ServeOptions o = Options(c, TaskRole::kWorker, int(i));
      if (i < worker_cancel.size()) o.cancel = worker_cancel[i];
      results[c.ps.size() + i] = Serve(job, o);
    });
  }
  for (std::thread& t : threads) t.join();
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
  // Async: one update per push, from both workers.
  EXPECT_GE(results[1]->steps, 400);
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
    for (int i = 0; i < 600 && !watcher.Pull({}, {}, 20).ok(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    kill_worker2 = true;
  });
  const auto start = Clock::now();
  auto results = RunCluster(job, c, {nullptr, nullptr, &kill_worker2});
  killer.join();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(60));
  EXPECT_TRUE(results[0].ok()) << results[0].status();
  ASSERT_TRUE(results[1].ok()) << results[1].status();
  EXPECT_TRUE(results[1]->eval.has_value());
  EXPECT_EQ(results[3].status().code(), absl::StatusCode::kCancelled);
}

// No PS is ever left running: without its chief it exits on its own.
TEST_F(DistributedTest, APsWithoutItsChiefExits) {
  JobFile job = Job("titanic");
  job.train.coordinator_timeout = 2;
  const Cluster c = MakeCluster(1, 1);
  const auto start = Clock::now();
  StatusOr<TrainResult> r = Serve(job, Options(c, TaskRole::kPs, 0));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(Message(r.status()).find("unreachable"), std::string::npos)
      << r.status();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
}

// A call without the run's secret is refused.
TEST_F(DistributedTest, CallsWithoutTheSecretAreRefused) {
  JobFile job = Job("titanic");
  job.train.coordinator_timeout = 3;
  const Cluster c = MakeCluster(1, 1);
  std::thread ps([&] { (void)Serve(job, Options(c, TaskRole::kPs, 0)); });
  RunCredentials wrong{"test-run", "ffffffffffffffffffffffffffffffff", ""};
  PsClient client(c.ps, wrong, 0, std::chrono::seconds(5));
  Status st;
  for (int i = 0; i < 50; ++i) {  // until the PS listens
    st = client.Pull({}, {}, 0);
    if (st.code() != absl::StatusCode::kUnavailable) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(st.code(), absl::StatusCode::kPermissionDenied) << st;
  EXPECT_NE(Message(st).find("wrong run id or secret"), std::string::npos);
  RunCredentials right{"test-run", kSecret, ""};
  PsClient good(c.ps, right, 0, std::chrono::seconds(5));
  EXPECT_TRUE(good.Shutdown("test over").ok());
  ps.join();
}

}  // namespace
}  // namespace dtf::runtime
