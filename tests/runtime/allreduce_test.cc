// mode = "allreduce": what can be checked without a GPU (the refusals and
// the NCCL unique id handed out by the chief's Coordinator over loopback
// gRPC), and training on a GPU where there is one.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/kernels/collective.h"
#include "lib/kernels/context.h"
#include "lib/runtime/allreduce_worker.h"
#include "lib/runtime/bundle.h"
#include "lib/runtime/checkpoint.h"
#include "lib/runtime/coordinator_service.h"
#include "lib/runtime/evaluator.h"
#include "lib/runtime/job_records.h"
#include "lib/runtime/serve.h"
#include "tests/runtime/runtime_testing.h"

namespace dtf::runtime {
namespace {

using testing::HeldPort;
using testing::LoadJobWithRecords;
using testing::WriteExampleJob;
using namespace std::chrono_literals;

constexpr char kSecret[] = "00112233445566778899aabbccddeeff";

ServeOptions Options(TaskRole role, int index, std::vector<std::string> ps,
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

TEST_F(AllreduceTest, CpuDeviceIsRefused) {
  StatusOr<JobFile> job = Job("cpu", /*records=*/false);
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_EQ(job->train.mode, TrainMode::kAllreduce);
  WorkerOptions options;
  options.workers = {"127.0.0.1:1"};
  StatusOr<TrainResult> result = RunAllreduceWorker(*job, options);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(result.status().message().find("set device = \"cuda\""),
            std::string_view::npos)
      << result.status();
}

TEST_F(AllreduceTest, ServeRefusesAWorkerOnTheCpu) {
  StatusOr<JobFile> job = Job("cpu", /*records=*/false);
  ASSERT_TRUE(job.ok()) << job.status();
  const HeldPort port;
  StatusOr<TrainResult> result =
      Serve(*job, Options(TaskRole::kWorker, 0, {}, {port.address()}));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(result.status().message().find("mode = \"allreduce\""),
            std::string_view::npos)
      << result.status();
}

TEST_F(AllreduceTest, ServeRefusesAParameterServer) {
  StatusOr<JobFile> job = Job("cuda", /*records=*/false);
  ASSERT_TRUE(job.ok()) << job.status();
  const HeldPort ps, worker;
  StatusOr<TrainResult> result = Serve(
      *job, Options(TaskRole::kPs, 0, {ps.address()}, {worker.address()}));
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

  int calls() const { return calls_; }
  int answered() const { return answered_; }

 private:
  CoordinatorService* const inner_;
  std::atomic<int> calls_{0};
  std::atomic<int> answered_{0};
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

TEST_F(AllreduceTest, TitanicOneWorkerOnCudaReachesTheGoal) {
  StatusOr<kernels::Context> gpu = kernels::Context::Cuda(0);
  if (!gpu.ok()) {
    GTEST_SKIP() << "no CUDA device to train on: " << gpu.status();
  }
  StatusOr<std::string> nccl = kernels::Communicator::NewId();
  if (!nccl.ok()) GTEST_SKIP() << "NCCL is not usable: " << nccl.status();
  StatusOr<JobFile> job = Job("cuda", /*records=*/true);
  ASSERT_TRUE(job.ok()) << job.status();
  const HeldPort port;
  StatusOr<TrainResult> result =
      Serve(*job, Options(TaskRole::kWorker, 0, {}, {port.address()}));
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
TEST_F(AllreduceTest, EarlyStoppingStopsTheRunAndExportsTheBest) {
  StatusOr<kernels::Context> gpu = kernels::Context::Cuda(0);
  if (!gpu.ok()) {
    GTEST_SKIP() << "no CUDA device to train on: " << gpu.status();
  }
  StatusOr<std::string> nccl = kernels::Communicator::NewId();
  if (!nccl.ok()) GTEST_SKIP() << "NCCL is not usable: " << nccl.status();
  StatusOr<JobFile> job =
      Job("cuda", /*records=*/true,
          "early_stopping = { patience = 2, min_delta = 10.0 }\n");
  ASSERT_TRUE(job.ok()) << job.status();
  const HeldPort port;
  StatusOr<TrainResult> result =
      Serve(*job, Options(TaskRole::kWorker, 0, {}, {port.address()}));
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
TEST_F(AllreduceTest, ACancelledChiefWritesItsCheckpoint) {
  StatusOr<kernels::Context> gpu = kernels::Context::Cuda(0);
  if (!gpu.ok()) {
    GTEST_SKIP() << "no CUDA device to train on: " << gpu.status();
  }
  StatusOr<std::string> nccl = kernels::Communicator::NewId();
  if (!nccl.ok()) GTEST_SKIP() << "NCCL is not usable: " << nccl.status();
  StatusOr<JobFile> job = Job("cuda", /*records=*/true);
  ASSERT_TRUE(job.ok()) << job.status();
  const HeldPort port;
  std::atomic<bool> cancel{false};
  ServeOptions o = Options(TaskRole::kWorker, 0, {}, {port.address()});
  o.cancel = &cancel;
  o.on_progress = [&](const TrainProgress&) { cancel = true; };
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
TEST_F(AllreduceTest, ARestoredRunTrainsOnFromItsCheckpoint) {
  StatusOr<kernels::Context> gpu = kernels::Context::Cuda(0);
  if (!gpu.ok()) {
    GTEST_SKIP() << "no CUDA device to train on: " << gpu.status();
  }
  StatusOr<std::string> nccl = kernels::Communicator::NewId();
  if (!nccl.ok()) GTEST_SKIP() << "NCCL is not usable: " << nccl.status();
  StatusOr<JobFile> job = Job("cuda", /*records=*/true);
  ASSERT_TRUE(job.ok()) << job.status();
  const HeldPort port;
  std::atomic<bool> cancel{false};
  ServeOptions o = Options(TaskRole::kWorker, 0, {}, {port.address()});
  o.cancel = &cancel;
  o.on_progress = [&](const TrainProgress&) { cancel = true; };
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
  ServeOptions again = Options(TaskRole::kWorker, 0, {}, {port.address()});
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

}  // namespace
}  // namespace dtf::runtime
