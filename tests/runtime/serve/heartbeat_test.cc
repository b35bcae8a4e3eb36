// A task's heartbeats to the chief's Coordinator over loopback gRPC: a
// worker's first step waits until the chief has heard from it.
#include "lib/runtime/serve/heartbeat.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "lib/runtime/cluster/coordinator_service.h"
#include "tests/runtime/runtime_testing.h"

namespace dtf::runtime {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

const rpc::RunCredentials kCreds{"beat-run", "00112233445566778899aabb", "j"};

// The chief's Coordinator `service` on `port`; null when it cannot bind.
std::unique_ptr<grpc::Server> Serve(CoordinatorService& service,
                                    const testing::HeldPort& port) {
  grpc::ServerBuilder builder;
  int bound = 0;
  builder.AddListeningPort(port.address(), grpc::InsecureServerCredentials(),
                           &bound);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (bound != port.port()) return nullptr;
  return server;
}

// Waits up to `limit` for `flag`.
bool WaitFor(const std::atomic<bool>& flag, std::chrono::milliseconds limit) {
  const auto until = Clock::now() + limit;
  while (!flag.load() && Clock::now() < until) {
    std::this_thread::sleep_for(10ms);
  }
  return flag.load();
}

// The chief's Coordinator comes up a while after the worker started: the
// worker's first step waits for it, and goes on once it heard the worker.
TEST(HeartbeatTest, TheFirstStepWaitsUntilTheChiefHearsTheTask) {
  testing::HeldPort port;
  Heartbeat beat(port.address(), kCreds, "worker:1", 30s, 1s, 100ms);
  std::atomic<bool> stepping{false};
  std::thread loop([&] {
    beat.Steps(0, 0, InputPosition{});
    stepping = true;
  });
  EXPECT_FALSE(WaitFor(stepping, 1500ms)) << "stepped before the chief heard";

  CoordinatorService service(kCreds,
                             {{"worker:0", port.address()}, {"worker:1", ""}});
  std::unique_ptr<grpc::Server> server = Serve(service, port);
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(WaitFor(stepping, 15s));
  loop.join();
  EXPECT_FALSE(beat.lost.load());
  // Later steps do not wait.
  const auto before = Clock::now();
  beat.Steps(1, 1, InputPosition{});
  EXPECT_LT(Clock::now() - before, 500ms);
  server->Shutdown();
}

// A chief that never answers: the first step goes on once the chief is
// lost (and the task's serve loop ends the task), never waits for ever.
TEST(HeartbeatTest, TheFirstStepGoesOnWhenTheChiefIsLost) {
  testing::HeldPort port;
  Heartbeat beat(port.address(), kCreds, "worker:1", 1s, 1s, 100ms);
  std::atomic<bool> stepping{false};
  std::thread loop([&] {
    beat.Steps(0, 0, InputPosition{});
    stepping = true;
  });
  EXPECT_TRUE(WaitFor(stepping, 20s));
  loop.join();
  EXPECT_TRUE(beat.lost.load());
}

// A task ending: Flush sends its final state at once (not at the next
// period) and returns once the chief has it; with the chief gone (a
// heartbeat waits for it to be ready until its deadline) at its limit.
TEST(HeartbeatTest, AFlushSaysTheFinalStateAtOnce) {
  testing::HeldPort port;
  CoordinatorService service(kCreds,
                             {{"worker:0", port.address()}, {"worker:1", ""}});
  std::unique_ptr<grpc::Server> server = Serve(service, port);
  ASSERT_NE(server, nullptr);
  // A period far past the test's: only a flush sends.
  Heartbeat beat(port.address(), kCreds, "worker:1", 60s, 30s, 10ms);
  beat.Steps(0, 0, InputPosition{});  // heard once
  beat.Steps(1, 1, InputPosition{});
  std::this_thread::sleep_for(100ms);  // that step's heartbeat
  ASSERT_THAT(service.RunningWorkers("worker:0", 60s),
              ::testing::ElementsAre("worker:1"));
  beat.Set(TaskState::kDone, 1, 0, 0);
  auto before = Clock::now();
  beat.Flush(10s);
  EXPECT_LT(Clock::now() - before, 2s);
  EXPECT_THAT(service.RunningWorkers("worker:0", 60s), ::testing::IsEmpty())
      << "the chief has the final state";

  server->Shutdown();
  server.reset();
  beat.Set(TaskState::kFailed, 1, 0, 0);
  before = Clock::now();
  beat.Flush(500ms);
  const auto waited = Clock::now() - before;
  EXPECT_GE(waited, 500ms);
  EXPECT_LT(waited, 3s);
}

// A run whose heartbeat_timeout is 1 s: a heartbeat every second would
// come a little after the chief counts the worker silent, each time (the
// chief, at the end of an async run, would stop waiting for a live worker).
// Heartbeats come three times in a timeout under 3 s.
TEST(HeartbeatTest, HeartbeatsComeSeveralTimesInAShortTimeout) {
  EXPECT_EQ(HeartbeatPeriod(1s), 333ms);
  EXPECT_EQ(HeartbeatPeriod(2s), 666ms);
  EXPECT_EQ(HeartbeatPeriod(3s), 1s);
  EXPECT_EQ(HeartbeatPeriod(10s), 1s);

  testing::HeldPort port;
  CoordinatorService service(kCreds,
                             {{"worker:0", port.address()}, {"worker:1", ""}});
  std::unique_ptr<grpc::Server> server = Serve(service, port);
  ASSERT_NE(server, nullptr);
  {
    Heartbeat beat(port.address(), kCreds, "worker:1", 30s, HeartbeatPeriod(1s),
                   100ms);
    beat.Steps(0, 0, InputPosition{});  // waits until the chief heard it
    const int64_t first = service.heartbeats();
    const auto until = Clock::now() + 2s;
    int polls = 0;
    while (Clock::now() < until) {
      EXPECT_THAT(service.RunningWorkers("worker:0", 1s),
                  ::testing::ElementsAre("worker:1"))
          << "after " << polls << " polls";
      ++polls;
      std::this_thread::sleep_for(5ms);
    }
    // 6 in 2 s; a heartbeat a second would make 2 or 3.
    EXPECT_GE(service.heartbeats() - first, 5);
  }
  server->Shutdown();
}

}  // namespace
}  // namespace dtf::runtime
