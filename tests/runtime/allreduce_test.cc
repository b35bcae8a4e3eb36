// mode = "allreduce": the refusals, the NCCL unique id and the Gloo
// rendezvous store of the chief's Coordinator over loopback gRPC, and one
// worker training on the CPU (Gloo) and on a GPU (NCCL) where there is one.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/kernels/context.h"
#include "lib/kernels/nccl.h"
#include "lib/runtime/checkpoint/bundle.h"
#include "lib/runtime/checkpoint/checkpoint.h"
#include "lib/runtime/cluster/coordinator_service.h"
#include "lib/runtime/cluster/coordinator_store.h"
#include "lib/runtime/export/exported_model.h"
#include "lib/runtime/serve/serve.h"
#include "lib/runtime/train/allreduce_worker.h"
#include "lib/runtime/train/evaluator.h"
#include "lib/runtime/train/job_records.h"
#include "tests/runtime/runtime_testing.h"

namespace dtf::runtime {
namespace {

using testing::HeldPort;
using testing::LoadJobWithRecords;
using testing::WriteExampleJob;
using namespace std::chrono_literals;

constexpr char kSecret[] = "00112233445566778899aabbccddeeff";

ServeOptions Options(Role role, int index, std::vector<std::string> ps,
                     std::vector<std::string> workers) {
  ServeOptions o;
  o.role = role;
  o.index = index;
  o.ps = std::move(ps);
  o.workers = std::move(workers);
  o.credentials.run_id = "test-run";
  o.credentials.secret = kSecret;
  o.threads = 1;
  return o;
}

class AllreduceTest : public ::testing::Test {
 protected:
  // The titanic example in allreduce mode on `device`, with `extra` [train]
  // lines.
  StatusOr<JobFile> Job(std::string_view device, bool records,
                        std::string_view extra = "") {
    const std::string train = StrCat(
        "log_every_steps = 10\nmode = \"allreduce\"\n"
        "device = \"",
        device, "\"\n", extra);
    DTF_ASSIGN_OR_RETURN(
        std::string path,
        WriteExampleJob("titanic", dir_, {{"log_every_steps = 10", train}}));
    if (records) return LoadJobWithRecords(path);
    return LoadJobFile(path);
  }
  dtf::testing::TempDir dir_;
};

// An on_progress hook that sets *cancel at the first progress report and
// holds the training thread long enough for the task's watcher, which
// passes the cancel on within its 50 ms poll, to see it: one rank on a CPU
// could otherwise train through the job's data before that.
std::function<void(const TrainProgress&)> CancelAtTheFirstReport(
    std::atomic<bool>* cancel) {
  return [cancel](const TrainProgress&) {
    if (cancel->exchange(true)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  };
}

// The tests that train, on the CPU (Gloo) and on a GPU (NCCL) where there
// is one.
class AllreduceDeviceTest : public AllreduceTest,
                            public ::testing::WithParamInterface<const char*> {
 protected:
  // Skips a CUDA test without a CUDA device or NCCL.
  void SetUp() override {
    if (std::string_view(GetParam()) != "cuda") return;
    StatusOr<kernels::Context> gpu = kernels::Context::Cuda(0);
    if (!gpu.ok()) {
      GTEST_SKIP() << "no CUDA device to train on: " << gpu.status();
    }
    StatusOr<std::string> nccl = kernels::NewNcclId();
    if (!nccl.ok()) GTEST_SKIP() << "NCCL is not usable: " << nccl.status();
  }
};

TEST_F(AllreduceTest, ServeRefusesAParameterServer) {
  StatusOr<JobFile> job = Job("cuda", /*records=*/false);
  ASSERT_TRUE(job.ok()) << job.status();
  const HeldPort ps, worker;
  StatusOr<TrainResult> result =
      Serve(*job, Options(Role::kPs, 0, {ps.address()}, {worker.address()}));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(result.status().message().find("allreduce"), std::string_view::npos)
      << result.status();
  EXPECT_NE(result.status().message().find("no parameter servers"),
            std::string_view::npos)
      << result.status();
}

// Hands every call to the chief's CoordinatorService, counting the CommId
// calls: all of them, and those answered with an id.
class CountingCoordinator final : public rpc::Coordinator::Service {
 public:
  explicit CountingCoordinator(CoordinatorService* inner) : inner_(inner) {}

  grpc::Status Heartbeat(grpc::ServerContext* context,
                         const rpc::HeartbeatRequest* request,
                         rpc::HeartbeatResponse* response) override {
    return inner_->Heartbeat(context, request, response);
  }
  grpc::Status Status(grpc::ServerContext* context,
                      const rpc::StatusRequest* request,
                      rpc::StatusResponse* response) override {
    return inner_->Status(context, request, response);
  }
  grpc::Status CommId(grpc::ServerContext* context,
                      const rpc::CommIdRequest* request,
                      rpc::CommIdResponse* response) override {
    ++calls_;
    grpc::Status status = inner_->CommId(context, request, response);
    if (status.ok()) ++answered_;
    return status;
  }
  grpc::Status KvSet(grpc::ServerContext* context,
                     const rpc::KvSetRequest* request,
                     rpc::KvSetResponse* response) override {
    ++kv_calls_;
    return inner_->KvSet(context, request, response);
  }
  grpc::Status KvGet(grpc::ServerContext* context,
                     const rpc::KvGetRequest* request,
                     rpc::KvGetResponse* response) override {
    ++kv_calls_;
    return inner_->KvGet(context, request, response);
  }

  int calls() const { return calls_; }
  int answered() const { return answered_; }
  int kv_calls() const { return kv_calls_; }

 private:
  CoordinatorService* const inner_;
  std::atomic<int> calls_{0};
  std::atomic<int> answered_{0};
  std::atomic<int> kv_calls_{0};
};

// A Coordinator service on a loopback port, as the chief serves it.
class CoordinatorServer {
 public:
  explicit CoordinatorServer(const RunCredentials& credentials)
      : address_(port_.address()),
        service_(credentials, {{"worker:0", address_}, {"worker:1", ""}}),
        counting_(&service_) {
    grpc::ServerBuilder builder;
    int bound = 0;
    builder.AddListeningPort(address_, grpc::InsecureServerCredentials(),
                             &bound);
    builder.RegisterService(&counting_);
    server_ = builder.BuildAndStart();
    if (bound != port_.port()) server_.reset();
  }
  ~CoordinatorServer() {
    if (server_) server_->Shutdown();
  }
  bool started() const { return server_ != nullptr; }
  const std::string& address() const { return address_; }
  CoordinatorService& service() { return service_; }
  const CountingCoordinator& counts() const { return counting_; }

 private:
  const HeldPort port_;
  std::string address_;
  CoordinatorService service_;
  CountingCoordinator counting_;
  std::unique_ptr<grpc::Server> server_;
};

// Waits up to `timeout` for `done()`.
template <typename F>
bool WaitFor(F done, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  return done();
}

TEST(CommIdTest, AnotherWorkerFetchesTheIdTheChiefSet) {
  const RunCredentials creds{"test-run", kSecret, ""};
  CoordinatorServer chief(creds);
  ASSERT_TRUE(chief.started());
  // Any bytes, zeros included, travel as they are.
  std::string id(128, '\0');
  for (size_t i = 0; i < id.size(); ++i) id[i] = char(i * 7);
  StatusOr<std::string> fetched = InternalError("not run");
  std::thread worker([&] {
    fetched = FetchCommId(chief.address(), creds, "worker:1",
                          std::chrono::seconds(120), nullptr);
  });
  // The worker asks before the chief has an id, and again until it has.
  EXPECT_TRUE(WaitFor([&] { return chief.counts().calls() >= 1; }, 60s))
      << "the worker did not ask within 60 s";
  EXPECT_EQ(chief.counts().answered(), 0);
  chief.service().SetCommId(id);
  worker.join();
  ASSERT_TRUE(fetched.ok()) << fetched.status();
  EXPECT_EQ(*fetched, id);
  EXPECT_GE(chief.counts().calls(), 2);
  EXPECT_EQ(chief.counts().answered(), 1);
}

TEST(CommIdTest, NoIdWithinTheTimeoutIsDeadlineExceeded) {
  const RunCredentials creds{"test-run", kSecret, ""};
  CoordinatorServer chief(creds);
  ASSERT_TRUE(chief.started());
  StatusOr<std::string> fetched = FetchCommId(
      chief.address(), creds, "worker:1", std::chrono::seconds(1), nullptr);
  ASSERT_FALSE(fetched.ok());
  EXPECT_EQ(fetched.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(fetched.status().message().find("coordinator_timeout"),
            std::string_view::npos)
      << fetched.status();
  EXPECT_NE(fetched.status().message().find("has not made the NCCL unique id"),
            std::string_view::npos)
      << fetched.status();
}

TEST(CommIdTest, AWrongSecretIsRefusedAtOnce) {
  const RunCredentials creds{"test-run", kSecret, ""};
  CoordinatorServer chief(creds);
  ASSERT_TRUE(chief.started());
  chief.service().SetCommId("id");
  const RunCredentials wrong{"test-run", "ffffffffffffffffffffffffffffffff",
                             ""};
  const auto start = std::chrono::steady_clock::now();
  StatusOr<std::string> fetched = FetchCommId(
      chief.address(), wrong, "worker:1", std::chrono::seconds(300), nullptr);
  ASSERT_FALSE(fetched.ok());
  EXPECT_EQ(fetched.status().code(), StatusCode::kPermissionDenied)
      << fetched.status();
  // Asked once, not again until the 300 s timeout.
  EXPECT_EQ(chief.counts().calls(), 1);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
}

TEST(CommIdTest, CancelStopsTheWait) {
  const RunCredentials creds{"test-run", kSecret, ""};
  CoordinatorServer chief(creds);
  ASSERT_TRUE(chief.started());
  std::atomic<bool> cancel{true};
  StatusOr<std::string> fetched = FetchCommId(
      chief.address(), creds, "worker:1", std::chrono::seconds(30), &cancel);
  EXPECT_EQ(fetched.status().code(), StatusCode::kCancelled);
}

// The Gloo rendezvous store on a real Coordinator over loopback gRPC: a
// key set by one worker is read by another, one not set yet is waited for
// (to the timeout), a wrong secret is refused at once, and sizes are
// bounded.
TEST(CoordinatorStoreTest, AWorkerReadsWhatAnotherSet) {
  const RunCredentials creds{"test-run", kSecret, ""};
  CoordinatorServer chief(creds);
  ASSERT_TRUE(chief.started());
  CoordinatorStore one(chief.address(), creds, "worker:1", nullptr);
  CoordinatorStore two(chief.address(), creds, "worker:2", nullptr);
  StatusOr<std::string> got = InternalError("not run");
  std::thread reader([&] { got = two.Get("gloo/1", 30s); });
  std::this_thread::sleep_for(200ms);
  const std::string value("\0addr\xff", 6);
  ASSERT_TRUE(one.Set("gloo/1", value).ok());
  reader.join();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, value);
  // The chief reads its own service in process.
  LocalCoordinatorStore local(&chief.service(), nullptr);
  StatusOr<std::string> again = local.Get("gloo/1", 1s);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, value);
}

TEST(CoordinatorStoreTest, AKeyNeverSetIsDeadlineExceeded) {
  const RunCredentials creds{"test-run", kSecret, ""};
  CoordinatorServer chief(creds);
  ASSERT_TRUE(chief.started());
  CoordinatorStore store(chief.address(), creds, "worker:1", nullptr);
  const auto start = std::chrono::steady_clock::now();
  StatusOr<std::string> got = store.Get("gloo/3", 1s);
  EXPECT_EQ(got.status().code(), StatusCode::kDeadlineExceeded) << got.status();
  EXPECT_NE(got.status().message().find("gloo/3"), std::string_view::npos)
      << got.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s);
}

TEST(CoordinatorStoreTest, AWrongSecretIsRefusedAtOnce) {
  const RunCredentials creds{"test-run", kSecret, ""};
  CoordinatorServer chief(creds);
  ASSERT_TRUE(chief.started());
  ASSERT_TRUE(chief.service().SetKey("gloo/0", "x").ok());
  const RunCredentials wrong{"test-run", "ffffffffffffffffffffffffffffffff",
                             ""};
  CoordinatorStore store(chief.address(), wrong, "worker:1", nullptr);
  const auto start = std::chrono::steady_clock::now();
  StatusOr<std::string> got = store.Get("gloo/0", 300s);
  EXPECT_EQ(got.status().code(), StatusCode::kPermissionDenied) << got.status();
  EXPECT_EQ(chief.counts().kv_calls(), 1);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 60s);
  const Status set = store.Set("gloo/1", "y");
  EXPECT_EQ(set.code(), StatusCode::kPermissionDenied) << set;
  EXPECT_FALSE(chief.service().GetKey("gloo/1").has_value());
}

TEST(CoordinatorStoreTest, SizesAreBounded) {
  const RunCredentials creds{"test-run", kSecret, ""};
  CoordinatorServer chief(creds);
  ASSERT_TRUE(chief.started());
  CoordinatorStore store(chief.address(), creds, "worker:1", nullptr);
  const Status long_key = store.Set(std::string(300, 'k'), "v");
  EXPECT_EQ(long_key.code(), StatusCode::kInvalidArgument) << long_key;
  const Status long_value = store.Set("k", std::string(40 << 10, 'v'));
  EXPECT_EQ(long_value.code(), StatusCode::kInvalidArgument) << long_value;
  // Besides its key and value, a KvSet takes what any control call does.
  CoordinatorStore stranger(chief.address(), creds,
                            std::string(rpc::kControlMaxRequestBytes, 'w'),
                            nullptr);
  const Status long_task = stranger.Set("k", "v");
  EXPECT_EQ(long_task.code(), StatusCode::kResourceExhausted) << long_task;
  EXPECT_FALSE(chief.service().GetKey("k").has_value());
  for (size_t i = 0; i < CoordinatorService::kMaxKeys; ++i) {
    ASSERT_TRUE(chief.service().SetKey(StrCat("k", i), "v").ok());
  }
  const Status full = store.Set("one-more", "v");
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted) << full;
  // A key already there may be set again.
  EXPECT_TRUE(store.Set("k0", "w").ok());
}

TEST(CoordinatorStoreTest, CancelStopsTheWait) {
  const RunCredentials creds{"test-run", kSecret, ""};
  CoordinatorServer chief(creds);
  ASSERT_TRUE(chief.started());
  std::atomic<bool> cancel{true};
  CoordinatorStore store(chief.address(), creds, "worker:1", &cancel);
  EXPECT_EQ(store.Get("gloo/0", 30s).status().code(), StatusCode::kCancelled);
}

TEST_P(AllreduceDeviceTest, TitanicOneWorkerReachesTheGoal) {
  StatusOr<JobFile> job = Job(GetParam(), /*records=*/true);
  ASSERT_TRUE(job.ok()) << job.status();
  const HeldPort port;
  StatusOr<TrainResult> result =
      Serve(*job, Options(Role::kWorker, 0, {}, {port.address()}));
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->eval.has_value());
  EXPECT_GE(*result->eval->metrics.Get("accuracy"), 0.75);
  EXPECT_GT(result->steps, 0);
  EXPECT_TRUE(std::filesystem::exists(result->checkpoint));
  EXPECT_TRUE(std::filesystem::exists(result->export_dir + "/variables.dtf"));
}

// Early stopping on the chief: min_delta 10 lets only the first evaluation
// (epoch 1, step 23) improve the loss, so the third (step 67) stops every
// rank; the export is the first evaluation's model.
TEST_P(AllreduceDeviceTest, EarlyStoppingStopsTheRunAndExportsTheBest) {
  StatusOr<JobFile> job =
      Job(GetParam(), /*records=*/true,
          "early_stopping = { patience = 2, min_delta = 10.0 }\n");
  ASSERT_TRUE(job.ok()) << job.status();
  const HeldPort port;
  StatusOr<TrainResult> result =
      Serve(*job, Options(Role::kWorker, 0, {}, {port.address()}));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->stopped_early);
  EXPECT_EQ(result->steps, 67);
  ASSERT_TRUE(result->best_eval.has_value());
  EXPECT_EQ(result->best_eval->step, 23);
  EXPECT_TRUE(std::filesystem::exists(result->best_checkpoint));
  StatusOr<LoadedModel> exported = LoadExportedModel(result->export_dir);
  ASSERT_TRUE(exported.ok()) << exported.status();
  StatusOr<JobRecords> records = FindJobRecords(*job);
  ASSERT_TRUE(records.ok()) << records.status();
  StatusOr<EvalMetrics> again =
      Evaluate(kernels::Context::Cpu(1), exported->layer, *exported->model,
               records->eval, 1024);
  ASSERT_TRUE(again.ok()) << again.status();
  // Evaluated on the CPU here, on the GPU in training.
  EXPECT_NEAR(*again->Get("loss"), *result->best_eval->metrics.Get("loss"),
              1e-4);
}

// A cancelled chief writes its replica's checkpoint before it returns.
TEST_P(AllreduceDeviceTest, ACancelledChiefWritesItsCheckpoint) {
  StatusOr<JobFile> job = Job(GetParam(), /*records=*/true);
  ASSERT_TRUE(job.ok()) << job.status();
  const HeldPort port;
  std::atomic<bool> cancel{false};
  ServeOptions o = Options(Role::kWorker, 0, {}, {port.address()});
  o.cancel = &cancel;
  o.on_progress = CancelAtTheFirstReport(&cancel);
  StatusOr<TrainResult> result = Serve(*job, o);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled)
      << result.status();
  StatusOr<Bundle> checkpoint = Bundle::ReadFile(
      (std::filesystem::path(job->train.output_dir) / kCheckpointFile)
          .string());
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  StatusOr<std::vector<int64_t>> step =
      checkpoint->GetInt64s("train/global_step");
  ASSERT_TRUE(step.ok()) << step.status();
  ASSERT_EQ(step->size(), 1u);
  EXPECT_GE((*step)[0], 10);  // log_every_steps
}

// A stopped run restarted with --restore (as the launcher restarts every
// worker): worker 0 restores its checkpoint, step and optimizer state, and
// trains on from there to the goal.
TEST_P(AllreduceDeviceTest, ARestoredRunTrainsOnFromItsCheckpoint) {
  StatusOr<JobFile> job = Job(GetParam(), /*records=*/true);
  ASSERT_TRUE(job.ok()) << job.status();
  const HeldPort port;
  std::atomic<bool> cancel{false};
  ServeOptions o = Options(Role::kWorker, 0, {}, {port.address()});
  o.cancel = &cancel;
  o.on_progress = CancelAtTheFirstReport(&cancel);
  StatusOr<TrainResult> stopped = Serve(*job, o);
  ASSERT_EQ(stopped.status().code(), absl::StatusCode::kCancelled)
      << stopped.status();
  StatusOr<Bundle> checkpoint = Bundle::ReadFile(
      (std::filesystem::path(job->train.output_dir) / kCheckpointFile)
          .string());
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  StatusOr<std::vector<int64_t>> step =
      checkpoint->GetInt64s("train/global_step");
  ASSERT_TRUE(step.ok() && step->size() == 1u) << step.status();

  std::vector<std::string> notes;
  ServeOptions again = Options(Role::kWorker, 0, {}, {port.address()});
  again.restore = true;
  again.on_note = [&](std::string_view n) { notes.emplace_back(n); };
  StatusOr<TrainResult> result = Serve(*job, again);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(notes, ::testing::Contains(::testing::HasSubstr(
                         StrCat("at global step ", (*step)[0]))));
  EXPECT_GT(result->steps, (*step)[0]);
  ASSERT_TRUE(result->eval.has_value());
  EXPECT_GE(*result->eval->metrics.Get("accuracy"), 0.75);
}

INSTANTIATE_TEST_SUITE_P(Devices, AllreduceDeviceTest,
                         ::testing::Values("cpu", "cuda"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

}  // namespace
}  // namespace dtf::runtime
