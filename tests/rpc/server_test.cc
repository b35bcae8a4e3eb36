// ConfigureServer's transport over real gRPC on loopback: with the run's
// mutual TLS a stranger is refused at the handshake, and a caller without
// the run's secret before a handler runs or its message is parsed, even
// when it floods the server with large messages.
#include "lib/rpc/server.h"

#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/rpc/call.h"
#include "lib/rpc/tls_certs.h"
#include "proto/dtf.grpc.pb.h"

namespace dtf::rpc {
namespace {

constexpr char kSecret[] = "00112233445566778899aabbccddeeff";

// Counts the calls that reached a handler.
class CountingCoordinator : public Coordinator::Service {
 public:
  grpc::Status Heartbeat(grpc::ServerContext*, const HeartbeatRequest*,
                         HeartbeatResponse*) override {
    ++calls;
    return grpc::Status::OK;
  }
  std::atomic<int> calls{0};
};

// This process's resident memory, in bytes.
int64_t ResidentBytes() {
  std::ifstream in("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  in >> pages >> resident;
  return resident * 4096;
}

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StatusOr<Pem> ca = MakeRunCa("run-1");
    ASSERT_TRUE(ca.ok()) << ca.status();
    ca_ = *ca;
    StatusOr<Pem> server = IssueCert(ca_, "ps-0", {"127.0.0.1"});
    StatusOr<Pem> client = IssueCert(ca_, "worker-0", {"127.0.0.1"});
    ASSERT_TRUE(server.ok() && client.ok());
    expected_ = {"run-1", kSecret, "", {ca_.cert, server->cert, server->key}};
    client_ = {"run-1", kSecret, "", {ca_.cert, client->cert, client->key}};
    grpc::ServerBuilder builder;
    ServerLimits limits;
    limits.max_receive_bytes = 8 << 20;
    ConfigureServer(&builder, "127.0.0.1:0", expected_, limits, &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);
  }
  void TearDown() override { server_->Shutdown(); }

  // One Heartbeat with `creds` on a channel made with `channel_creds`.
  grpc::Status Call(const RunCredentials& creds,
                    std::shared_ptr<grpc::ChannelCredentials> channel_creds,
                    size_t task_bytes = 1) {
    auto channel = grpc::CreateChannel(StrCat("127.0.0.1:", port_),
                                       std::move(channel_creds));
    auto stub = Coordinator::NewStub(channel);
    auto context = MakeClientContext(creds, std::chrono::seconds(10));
    context->set_wait_for_ready(false);
    HeartbeatRequest request;
    request.set_task(std::string(task_bytes, 'x'));
    HeartbeatResponse response;
    return stub->Heartbeat(context.get(), request, &response);
  }

  Pem ca_;
  RunCredentials expected_, client_;
  CountingCoordinator service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

TEST_F(ServerTest, ATaskOfTheRunIsServed) {
  grpc::Status st = Call(client_, MakeChannelCredentials(client_));
  EXPECT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(service_.calls, 1);
}

// No certificate, a plaintext channel, or a certificate of another run's
// CA: the handshake fails, and no call reaches a handler.
TEST_F(ServerTest, StrangersAreRefusedAtTheHandshake) {
  grpc::SslCredentialsOptions no_cert;
  no_cert.pem_root_certs = ca_.cert;
  EXPECT_EQ(Call(client_, grpc::SslCredentials(no_cert)).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(Call(client_, grpc::InsecureChannelCredentials()).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  StatusOr<Pem> other_ca = MakeRunCa("run-2");
  ASSERT_TRUE(other_ca.ok());
  StatusOr<Pem> other = IssueCert(*other_ca, "worker-0", {"127.0.0.1"});
  ASSERT_TRUE(other.ok());
  RunCredentials foreign = client_;
  foreign.tls.cert_pem = other->cert;
  foreign.tls.key_pem = other->key;
  EXPECT_EQ(Call(foreign, MakeChannelCredentials(foreign)).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(service_.calls, 0);
}

// A certificate of the run but not its secret (or not its run id): refused
// on the call's metadata, before a handler runs.
TEST_F(ServerTest, AWrongSecretIsRefusedBeforeAnyHandler) {
  RunCredentials wrong = client_;
  wrong.secret = "ffffffffffffffffffffffffffffffff";
  grpc::Status st = Call(wrong, MakeChannelCredentials(wrong));
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED)
      << st.error_message();
  EXPECT_EQ(st.error_message(),
            "not a task of run run-1 (wrong run id or secret)");
  RunCredentials other_run = client_;
  other_run.run_id = "run-2";
  EXPECT_EQ(Call(other_run, MakeChannelCredentials(other_run)).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(service_.calls, 0);
}

// 8 threads x 16 calls of 4 MiB each (512 MiB in all) without the secret:
// every one refused, none reaching a handler, and the process's memory
// grows by far less than what was sent (the bodies are not kept).
TEST_F(ServerTest, AFloodOfLargeCallsWithoutTheSecretStaysBounded) {
  RunCredentials wrong = client_;
  wrong.secret = "ffffffffffffffffffffffffffffffff";
  // Warm up gRPC's and the allocator's own buffers first.
  ASSERT_EQ(Call(wrong, MakeChannelCredentials(wrong), 4 << 20).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  const int64_t before = ResidentBytes();
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 16; ++i) {
        grpc::Status st = Call(wrong, MakeChannelCredentials(wrong), 4 << 20);
        if (st.error_code() == grpc::StatusCode::UNAUTHENTICATED) ++refused;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const int64_t grown = ResidentBytes() - before;
  EXPECT_EQ(refused, 8 * 16);
  EXPECT_EQ(service_.calls, 0);
  // Each thread holds one 4 MiB request of its own while it calls.
  EXPECT_LT(grown, int64_t(160) << 20) << "grew by " << (grown >> 20) << " MiB";
  // And the server still serves the run's tasks.
  EXPECT_TRUE(Call(client_, MakeChannelCredentials(client_)).ok());
}

// The chief's Coordinator takes small reports only: a task of the run that
// sends a bigger message is refused as its length arrives, and no handler
// runs; the largest heartbeat a real task sends fits well within it.
TEST_F(ServerTest, TheCoordinatorsLimitRefusesALargeRequestOfARunsTask) {
  CountingCoordinator service;
  grpc::ServerBuilder builder;
  ServerLimits limits;
  limits.max_receive_bytes = kCoordinatorMaxRequestBytes;
  int port = 0;
  ConfigureServer(&builder, "127.0.0.1:0", expected_, limits, &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  auto call = [&](HeartbeatRequest request) {
    auto stub =
        Coordinator::NewStub(MakeChannel(StrCat("127.0.0.1:", port), client_));
    auto context = MakeClientContext(client_, std::chrono::seconds(10));
    HeartbeatResponse response;
    return stub->Heartbeat(context.get(), request, &response);
  };
  HeartbeatRequest big;
  big.set_task(std::string(kCoordinatorMaxRequestBytes + 1, 'x'));
  grpc::Status st = call(big);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << st.error_message();
  EXPECT_EQ(service.calls, 0);

  HeartbeatRequest real;
  real.set_task("worker:9999");
  real.set_state("running");
  real.set_step(int64_t{1} << 40);
  real.set_loss(0.25);
  real.set_examples_per_sec(1e6);
  real.set_incarnation(~uint64_t{0});
  real.set_steps_done(int64_t{1} << 40);
  for (int64_t v : {int64_t{1} << 20, int64_t{1} << 20, int64_t{1} << 40,
                    int64_t{1} << 40}) {
    real.add_input_position(v);
  }
  EXPECT_LT(real.ByteSizeLong(), size_t{kCoordinatorMaxRequestBytes} / 100);
  st = call(real);
  EXPECT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(service.calls, 1);
  server->Shutdown();
}

// This process's peak resident memory, in bytes.
int64_t PeakResidentBytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) << 10;
  }
  return 0;
}

// A task of the run that sends the chief a Heartbeat of 400 MiB: gRPC
// reads a message whole before it compares its size, but the chief's
// server stops reading once its buffers hold kCoordinatorMaxMemoryBytes,
// so the message is never read whole, no handler runs, and the other
// tasks' calls go on meanwhile. The request's body is a mapping of
// untouched pages, so that only the server's buffers could grow.
TEST_F(ServerTest, TheChiefNeverReadsALargeRequestWhole) {
  CountingCoordinator service;
  grpc::ServerBuilder builder;
  ServerLimits limits;
  limits.max_receive_bytes = kCoordinatorMaxRequestBytes;
  limits.max_memory_bytes = kCoordinatorMaxMemoryBytes;
  int port = 0;
  ConfigureServer(&builder, "127.0.0.1:0", expected_, limits, &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  const std::string address = StrCat("127.0.0.1:", port);
  auto heartbeat = [&] {
    auto stub = Coordinator::NewStub(MakeChannel(address, client_));
    auto context = MakeClientContext(client_, std::chrono::seconds(5));
    HeartbeatRequest request;
    request.set_task("worker:1");
    HeartbeatResponse response;
    return stub->Heartbeat(context.get(), request, &response);
  };
  ASSERT_TRUE(heartbeat().ok());

  // HeartbeatRequest{task: 400 MiB}: field 1's tag, a 5-byte varint length.
  constexpr size_t kBody = size_t(400) << 20;
  const size_t total = 6 + kBody;
  void* mapped = mmap(nullptr, total, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(mapped, MAP_FAILED);
  auto* bytes = static_cast<uint8_t*>(mapped);
  bytes[0] = 0x0a;
  for (int i = 0; i < 5; ++i) {
    bytes[1 + i] = uint8_t(((kBody >> (7 * i)) & 0x7f) | (i < 4 ? 0x80 : 0));
  }
  const int64_t before = PeakResidentBytes();
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(-1);
  auto channel =
      grpc::CreateCustomChannel(address, MakeChannelCredentials(client_), args);
  grpc::GenericStub stub(channel);
  auto context = MakeClientContext(client_, std::chrono::seconds(5));
  grpc::Slice slice(mapped, total, grpc::Slice::STATIC_SLICE);
  grpc::ByteBuffer request(&slice, 1);
  grpc::CompletionQueue cq;
  auto call = stub.PrepareUnaryCall(
      context.get(), "/dtf.rpc.Coordinator/Heartbeat", request, &cq);
  call->StartCall();
  grpc::ByteBuffer response;
  grpc::Status big;
  call->Finish(&response, &big, nullptr);

  std::this_thread::sleep_for(std::chrono::seconds(1));
  grpc::Status small = heartbeat();
  EXPECT_TRUE(small.ok()) << small.error_message();
  void* tag = nullptr;
  bool ok = false;
  ASSERT_TRUE(cq.Next(&tag, &ok));
  const int64_t grown = PeakResidentBytes() - before;
  EXPECT_FALSE(big.ok());
  EXPECT_EQ(service.calls, 2);
  // gRPC may overshoot its quota by a few buffers; read whole, the
  // request alone would take 400 MiB.
  EXPECT_LT(grown, 2 * int64_t(kCoordinatorMaxMemoryBytes) + (32 << 20))
      << "grew by " << (grown >> 20) << " MiB";
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  server->Shutdown();
  munmap(mapped, total);
}

// Plaintext on loopback (a local run): the secret is checked on the
// metadata too, before a handler runs.
TEST(PlaintextServerTest, LoopbackChecksTheSecretBeforeAnyHandler) {
  CountingCoordinator service;
  const RunCredentials expected{"run-1", kSecret, ""};
  grpc::ServerBuilder builder;
  int port = 0;
  ConfigureServer(&builder, "127.0.0.1:0", expected, ServerLimits{}, &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  auto call = [&](const RunCredentials& creds) {
    auto stub =
        Coordinator::NewStub(MakeChannel(StrCat("127.0.0.1:", port), creds));
    auto context = MakeClientContext(creds, std::chrono::seconds(10));
    HeartbeatRequest request;
    HeartbeatResponse response;
    return stub->Heartbeat(context.get(), request, &response);
  };
  RunCredentials wrong = expected;
  wrong.secret = "ffffffffffffffffffffffffffffffff";
  EXPECT_EQ(call(wrong).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(service.calls, 0);
  EXPECT_TRUE(call(expected).ok());
  EXPECT_EQ(service.calls, 1);
  server->Shutdown();
}

// Other loopback addresses (127.0.0.2, as the SSH tests' hosts) are served
// to their peers: gRPC's local credentials, which take 127.0.0.1 and ::1
// only, are not used there.
TEST(PlaintextServerTest, OtherLoopbackAddressesAreServed) {
  CountingCoordinator service;
  const RunCredentials expected{"run-1", kSecret, ""};
  grpc::ServerBuilder builder;
  int port = 0;
  ConfigureServer(&builder, "127.0.0.2:0", expected, ServerLimits{}, &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  auto stub =
      Coordinator::NewStub(MakeChannel(StrCat("127.0.0.2:", port), expected));
  auto context = MakeClientContext(expected, std::chrono::seconds(10));
  HeartbeatRequest request;
  HeartbeatResponse response;
  grpc::Status st = stub->Heartbeat(context.get(), request, &response);
  EXPECT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(service.calls, 1);
  server->Shutdown();
}

}  // namespace
}  // namespace dtf::rpc
