// dtf status's data: from a chief that answers Coordinator.Status (a fake
// one here), and from process liveness when it does not.
#include "lib/launch/run_status.h"

#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mutex>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/launch/local/local_backend.h"
#include "lib/launch/status_client.h"
#include "lib/rpc/credentials.h"
#include "proto/dtf.grpc.pb.h"
#include "tests/launch/launch_testing.h"
#include "tests/testing/temp_dir.h"

namespace dtf::launch {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

std::string Metadata(const grpc::ServerContext& context, const char* key) {
  auto it = context.client_metadata().find(key);
  if (it == context.client_metadata().end()) return "";
  return std::string(it->second.data(), it->second.size());
}

// Answers Status for the run it is told of, refusing a wrong secret.
class FakeCoordinator final : public rpc::Coordinator::Service {
 public:
  void Expect(const std::string& run, const std::string& secret) {
    std::lock_guard<std::mutex> lock(mu_);
    run_ = run;
    secret_ = secret;
  }
  int calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

  grpc::Status Status(grpc::ServerContext* context, const rpc::StatusRequest*,
                      rpc::StatusResponse* response) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++calls_;
    if (Metadata(*context, "dtf-run") != run_ ||
        Metadata(*context, "dtf-secret") != secret_) {
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          "wrong run or secret");
    }
    if (Metadata(*context, "dtf-version") != "1") {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "version");
    }
    response->set_run_id(run_);
    response->set_global_step(1200);
    response->set_state("running");
    (*response->mutable_eval_metrics())["auc"] = 0.875;
    rpc::TaskStatus* t = response->add_tasks();
    t->set_task("worker:1");
    t->set_address("127.0.0.1:1");
    t->set_state("running");
    t->set_step(1190);
    t->set_loss(0.35);
    t->set_examples_per_sec(5000);
    t->set_seconds_since_heartbeat(0.4);
    t->set_restarts(1);
    t->set_rss_bytes(int64_t{412} << 20);
    // As the chief lists a worker slot it has not heard from.
    rpc::TaskStatus* spare = response->add_tasks();
    spare->set_task("worker:2");
    spare->set_state("starting");
    spare->set_seconds_since_heartbeat(3.0);
    return grpc::Status::OK;
  }

 private:
  std::mutex mu_;
  std::string run_, secret_;
  int calls_ = 0;
};

class RunStatusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(&fake_);
    server_ = builder.BuildAndStart();
    ASSERT_TRUE(server_ != nullptr);
    ASSERT_GT(port_, 0);
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  // `top`: more profile keys.
  std::unique_ptr<LocalRun> StartRun(const std::string& env,
                                     const std::string& top = "") {
    RunOptions o;
    o.grace = 300ms;
    o.poll = 10ms;
    StatusOr<std::unique_ptr<LocalRun>> run =
        LocalRun::Start(testing::Request(dir_, binary_,
                                         "ps = 1\nworkers = 2\n" + top +
                                             "[env]\n"
                                             "STANDIN_CHIEF_SLEEP = \"60\"\n" +
                                             env),
                        o);
    EXPECT_TRUE(run.ok()) << run.status();
    if (!run.ok()) return nullptr;
    LocalRun& r = **run;
    EXPECT_TRUE(testing::WaitFor([&] {
      r.Poll();
      return r.ready(0) && r.ready(1) && r.ready(2);
    }));
    return std::move(*run);
  }

  // The status of `run`, whose chief is the fake (told the run's id and
  // secret to expect).
  StatusOr<RunStatus> StatusFromFakeChief(const LocalRun& run) {
    DTF_ASSIGN_OR_RETURN(const std::string secret,
                         rpc::ReadSecretFile(run.plan().secret_file));
    fake_.Expect(run.run_id(), secret);
    return CollectRunStatus(run.plan().run_dir, 30s);
  }

  FakeCoordinator fake_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  dtf::testing::TempDir dir_{"dtf_run_status_test"};
  std::string binary_ = testing::WriteStandIn(dir_);
};

TEST_F(RunStatusTest, QueryCoordinatorSendsTheRunAndSecret) {
  fake_.Expect("run-1", "s3cret");
  const std::string address = StrCat("127.0.0.1:", port_);
  StatusOr<CoordinatorStatus> ok =
      QueryCoordinator(address, "run-1", "s3cret", 30s);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->global_step, 1200);
  ASSERT_EQ(ok->tasks.size(), 2u);
  EXPECT_EQ(ok->tasks[0].restarts, 1);

  StatusOr<CoordinatorStatus> refused =
      QueryCoordinator(address, "run-1", "wrong", 30s);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(Message(refused.status()), HasSubstr("chief at " + address));
}

TEST_F(RunStatusTest, UnreachableChiefIsUnavailableWithinTheDeadline) {
  // A port bound and never listened on refuses connections; one listened
  // on and never accepted from takes them and says nothing. Each call ends
  // by its 500 ms deadline, far inside the 30 s this test allows.
  for (const bool listening : {false, true}) {
    SCOPED_TRACE(listening ? "silent chief" : "refused connection");
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(sa);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
    ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &length), 0);
    if (listening) {
      ASSERT_EQ(::listen(fd, 8), 0);
    }
    const auto started = std::chrono::steady_clock::now();
    StatusOr<CoordinatorStatus> s = QueryCoordinator(
        StrCat("127.0.0.1:", ntohs(sa.sin_port)), "r", "s", 500ms);
    EXPECT_LT(std::chrono::steady_clock::now() - started, 30s);
    ::close(fd);
    ASSERT_FALSE(s.ok());
    EXPECT_TRUE(s.status().code() == StatusCode::kUnavailable ||
                s.status().code() == StatusCode::kDeadlineExceeded)
        << s.status();
  }
}

TEST_F(RunStatusTest, StatusComesFromTheChiefWhenItAnswers) {
  std::unique_ptr<LocalRun> run =
      StartRun(StrCat("STANDIN_CHIEF_ADDRESS = \"127.0.0.1:", port_, "\"\n"));
  ASSERT_TRUE(run);
  StatusOr<RunStatus> status = StatusFromFakeChief(*run);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_TRUE(status->from_chief) << status->chief_error;
  EXPECT_EQ(status->global_step, 1200);
  EXPECT_EQ(status->state, RunState::kRunning);
  const TaskStatusRow& w1 = status->tasks[2];
  EXPECT_EQ(w1.task, "worker:1");
  EXPECT_EQ(w1.step, 1190);
  EXPECT_EQ(w1.restarts, 1);
  EXPECT_TRUE(w1.alive);
  EXPECT_FALSE(status->tasks[0].step.has_value());
  const std::string text = RunStatusToText(*status, status->started_ms + 5000);
  EXPECT_THAT(text, HasSubstr("global step 1200, running, auc 0.8750"));
  EXPECT_THAT(text, HasSubstr("1190"));
  EXPECT_THAT(text, HasSubstr("0.4s ago"));
  // The task's memory as its heartbeats said, in a column of its own.
  EXPECT_THAT(text, HasSubstr("MEMORY"));
  EXPECT_THAT(text, HasSubstr("412M"));
  EXPECT_EQ(w1.rss_bytes, int64_t{412} << 20);
  const std::string json = RunStatusToJson(*status);
  EXPECT_THAT(json, HasSubstr("\"source\": \"chief\""));
  EXPECT_THAT(json, HasSubstr("\"examples_per_sec\": 5000.0"));
  EXPECT_THAT(json, HasSubstr("\"rss_bytes\": 432013312"));
  EXPECT_GE(fake_.calls(), 1);
  run->Stop(CancelledError("test over"));
}

// A worker slot reserved for dtf scale (max_workers) shows as reserved,
// with nothing of the chief's about it.
TEST_F(RunStatusTest, AReservedSlotShowsAsReserved) {
  std::unique_ptr<LocalRun> run =
      StartRun(StrCat("STANDIN_CHIEF_ADDRESS = \"127.0.0.1:", port_, "\"\n"),
               "max_workers = 3\n");
  ASSERT_TRUE(run);
  StatusOr<RunStatus> status = StatusFromFakeChief(*run);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_TRUE(status->from_chief) << status->chief_error;
  ASSERT_EQ(status->tasks.size(), 4u);
  const TaskStatusRow& spare = status->tasks[3];
  EXPECT_EQ(spare.task, "worker:2");
  EXPECT_EQ(spare.state, "reserved");
  EXPECT_FALSE(spare.alive);
  EXPECT_FALSE(spare.step.has_value());
  EXPECT_FALSE(spare.seconds_since_heartbeat.has_value());
  run->Stop(CancelledError("test over"));
}

TEST_F(RunStatusTest, FallsBackToProcessesWhenTheChiefDoesNotAnswer) {
  std::unique_ptr<LocalRun> run = StartRun("");
  ASSERT_TRUE(run);
  StatusOr<RunStatus> status = CollectRunStatus(run->plan().run_dir, 500ms);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_FALSE(status->from_chief);
  EXPECT_THAT(status->chief_error,
              HasSubstr("chief at " + run->plan().tasks[1].address()));
  for (const TaskStatusRow& row : status->tasks) {
    EXPECT_EQ(row.state, "running") << row.task;
    EXPECT_TRUE(row.alive) << row.task;
    EXPECT_FALSE(row.step.has_value());
  }
  const std::string text = RunStatusToText(*status, status->started_ms);
  EXPECT_THAT(text, HasSubstr("chief unreachable"));
  EXPECT_THAT(text, HasSubstr("process liveness"));
  EXPECT_THAT(RunStatusToJson(*status), HasSubstr("\"source\": \"processes\""));
  run->Stop(CancelledError("test over"));
  StatusOr<RunStatus> after = CollectRunStatus(run->plan().run_dir, 500ms);
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->over());
  EXPECT_EQ(after->state, RunState::kStopped);
  EXPECT_THAT(RunStatusToText(*after, after->started_ms),
              HasSubstr("stopped (143)"));
}

}  // namespace
}  // namespace dtf::launch
