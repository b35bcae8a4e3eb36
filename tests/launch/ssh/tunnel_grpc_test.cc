// gRPC (HTTP/2) through a Tunnel: several channels, each its own TCP
// connection and forward, with concurrent calls and large messages.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "lib/base/strings.h"
#include "lib/launch/ssh/tunnel.h"
#include "proto/dtf.grpc.pb.h"
#include "tests/launch/ssh/ssh_testing.h"

namespace dtf::launch::ssh::testing {
namespace {

// Status answers with `tasks` entries; Heartbeat asks for shutdown when the
// task name ends in "!".
class FakeCoordinator final : public dtf::rpc::Coordinator::Service {
 public:
  grpc::Status Heartbeat(grpc::ServerContext*,
                         const dtf::rpc::HeartbeatRequest* request,
                         dtf::rpc::HeartbeatResponse* response) override {
    response->set_shutdown(!request->task().empty() &&
                           request->task().back() == '!');
    return grpc::Status::OK;
  }
  grpc::Status Status(grpc::ServerContext*, const dtf::rpc::StatusRequest*,
                      dtf::rpc::StatusResponse* response) override {
    response->set_run_id("run-through-tunnel");
    for (int i = 0; i < 5000; ++i) {
      dtf::rpc::TaskStatus* task = response->add_tasks();
      task->set_task(StrCat("worker:", i));
      task->set_address(std::string(200, 'x'));
      task->set_step(i);
    }
    return grpc::Status::OK;
  }
};

using TunnelGrpcTest = SshdTest;

TEST_F(TunnelGrpcTest, ConcurrentCallsOnSeveralChannels) {
  FakeCoordinator service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  ASSERT_GT(port, 0);

  auto tunnel = Tunnel::Open(sshd_->target(), "127.0.0.1", port);
  ASSERT_TRUE(tunnel.ok()) << tunnel.status();
  std::string address = (*tunnel)->local_address();

  constexpr int kChannels = 4;
  constexpr int kThreadsPerChannel = 3;
  std::atomic<int> failures{0};
  std::atomic<int> calls{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < kChannels; ++c) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // own connection
    args.SetMaxReceiveMessageSize(16 << 20);
    std::shared_ptr<grpc::Channel> channel = grpc::CreateCustomChannel(
        address, grpc::InsecureChannelCredentials(), args);
    for (int t = 0; t < kThreadsPerChannel; ++t) {
      threads.emplace_back([&, channel, c, t] {
        auto stub = dtf::rpc::Coordinator::NewStub(channel);
        for (int i = 0; i < 10; ++i) {
          grpc::ClientContext context;
          context.set_deadline(std::chrono::system_clock::now() +
                               std::chrono::seconds(30));
          dtf::rpc::HeartbeatRequest request;
          request.set_task(StrCat("worker:", c, ":", t, i % 2 ? "!" : ""));
          dtf::rpc::HeartbeatResponse response;
          grpc::Status status = stub->Heartbeat(&context, request, &response);
          if (!status.ok() || response.shutdown() != (i % 2 == 1)) {
            ++failures;
          }
          ++calls;
          if (i % 3 == 0) {
            grpc::ClientContext big_context;
            big_context.set_deadline(std::chrono::system_clock::now() +
                                     std::chrono::seconds(30));
            dtf::rpc::StatusResponse big;
            status =
                stub->Status(&big_context, dtf::rpc::StatusRequest(), &big);
            if (!status.ok() || big.tasks_size() != 5000 ||
                big.run_id() != "run-through-tunnel") {
              ++failures;
            }
            ++calls;
          }
        }
      });
    }
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(calls, kChannels * kThreadsPerChannel * 14);
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
}

}  // namespace
}  // namespace dtf::launch::ssh::testing
