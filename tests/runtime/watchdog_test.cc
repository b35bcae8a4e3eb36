// The chief's Coordinator over loopback gRPC: its step-progress watchdog
// (each worker's steps as its heartbeats report them), the workers it
// waits for, the input shards it hands on, and the rendezvous store of
// allreduce ranks. Real runs: watchdog_run_test.cc.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "lib/base/strings.h"
#include "lib/rpc/call.h"
#include "lib/runtime/cluster/coordinator_service.h"
#include "lib/runtime/cluster/coordinator_store.h"
#include "tests/runtime/runtime_testing.h"

namespace dtf::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::HeldPort;
using ::testing::IsEmpty;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

const rpc::RunCredentials kCreds{"watch-run", "00112233445566778899aabb", "j"};

// The chief's Coordinator on a loopback port, and a worker's heartbeats to
// it.
class WatchdogTest : public ::testing::Test {
 protected:
  WatchdogTest()
      : service_(kCreds, {{"worker:0", port_.address()},
                          {"worker:1", ""},
                          {"worker:2", ""}}) {
    grpc::ServerBuilder builder;
    int bound = 0;
    builder.AddListeningPort(port_.address(), grpc::InsecureServerCredentials(),
                             &bound);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    EXPECT_EQ(bound, port_.port());
    stub_ = rpc::Coordinator::NewStub(rpc::MakeChannel(port_.address(), {}));
    service_.Watch("worker:0", 400ms);
  }
  ~WatchdogTest() override { server_->Shutdown(); }

  // One heartbeat of `task`; the chief's answer.
  rpc::HeartbeatResponse Beat(const std::string& task, uint64_t incarnation,
                              int64_t steps_done,
                              const std::string& state = "running") {
    rpc::HeartbeatRequest request;
    request.set_task(task);
    request.set_state(state);
    request.set_step(100 + steps_done);
    request.set_steps_done(steps_done);
    request.set_incarnation(incarnation);
    auto context = rpc::MakeClientContext(kCreds, 5s);
    rpc::HeartbeatResponse response;
    const grpc::Status st = stub_->Heartbeat(context.get(), request, &response);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return response;
  }

  // Input shards watched with a 1 s shard timeout; the chief running,
  // workers 1 and 2 heard once.
  void WatchEveryWorkersInput() {
    service_.WatchInput(1s, 60s);
    service_.Update("worker:0", TaskState::kRunning, 5, 0, 0);
    Beat("worker:1", 11, 1);
    Beat("worker:2", 21, 1);
  }

  std::vector<std::string> Stalled() {
    std::vector<std::string> names;
    for (const auto& s : service_.CheckStalls()) names.push_back(s.task);
    return names;
  }

  HeldPort port_;
  CoordinatorService service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<rpc::Coordinator::Stub> stub_;
};

// A worker that says it failed (its final heartbeat) reads nothing more:
// its input shard is handed on at once, not once its heartbeats have been
// missing for the shard timeout, since the chief stops counting it as
// running at once and, its own input ended, would end the run with the
// shard unread.
TEST_F(WatchdogTest, AFailedWorkersInputShardIsHandedOnAtOnce) {
  WatchEveryWorkersInput();
  const InputPosition at{2, 0, 40, 40};
  const std::vector<std::optional<InputPosition>> committed = {{}, at, {}};
  EXPECT_FALSE(service_.HasInputToHandOn());
  Beat("worker:1", 11, 3, "failed");
  EXPECT_THAT(service_.RunningWorkers("worker:0", 3s, 60s),
              ElementsAre("worker:2"));
  EXPECT_TRUE(service_.HasInputToHandOn());
  EXPECT_THAT(service_.HandOnInput(committed),
              ElementsAre("worker:1's input shard is read on by worker:0 "
                          "from epoch 3, record 40"));
  EXPECT_THAT(*service_.InputShardsOf("worker:0"),
              ElementsAre(InputShard{0, {}}, InputShard{1, at, 1}));
  // One that finished its input is not handed on.
  Beat("worker:2", 21, 3, "done");
  EXPECT_FALSE(service_.HasInputToHandOn());
  EXPECT_TRUE(service_.UnreadShards().empty());
}

// The input position each worker reports with its heartbeats: the chief
// keeps the latest, and waits (boundedly) for the positions of its step.
TEST_F(WatchdogTest, TheChiefKeepsEachWorkersLatestInputPosition) {
  auto beat = [&](int64_t step, std::vector<int64_t> position) {
    rpc::HeartbeatRequest request;
    request.set_task("worker:1");
    request.set_state("running");
    request.set_step(step);
    request.set_steps_done(step);
    request.set_incarnation(11);
    for (const int64_t p : position) request.add_input_position(p);
    auto context = rpc::MakeClientContext(kCreds, 5s);
    rpc::HeartbeatResponse response;
    return stub_->Heartbeat(context.get(), request, &response);
  };
  ASSERT_TRUE(beat(3, {1, 0, 5, 50, 12}).ok());
  std::vector<std::optional<InputPosition>> p =
      service_.WorkerPositions(0, 0ms);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_FALSE(p[0].has_value());
  EXPECT_EQ(p[1], (InputPosition{1, 0, 5, 50, 12}));
  EXPECT_FALSE(p[2].has_value());  // never heard from: not waited for
  // A heartbeat without one keeps the last.
  ASSERT_TRUE(beat(4, {}).ok());
  EXPECT_EQ(service_.WorkerPositions(0, 0ms)[1],
            (InputPosition{1, 0, 5, 50, 12}));
  // Four numbers: the records yielded are not known.
  ASSERT_TRUE(beat(4, {1, 0, 5, 50}).ok());
  EXPECT_EQ(service_.WorkerPositions(0, 0ms)[1],
            (InputPosition{1, 0, 5, 50, -1}));
  const grpc::Status bad = beat(4, {1, 0, 5});
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(bad.error_message(), HasSubstr("an input position of 3 numbers"));

  // Waits for worker:1's report at step 10, not longer.
  auto start = Clock::now();
  std::thread later([&] {
    std::this_thread::sleep_for(200ms);
    EXPECT_TRUE(beat(10, {1, 0, 9, 90, 30}).ok());
  });
  p = service_.WorkerPositions(10, 5s);
  later.join();
  EXPECT_GE(Clock::now() - start, 200ms);
  EXPECT_LT(Clock::now() - start, 4s);
  EXPECT_EQ(p[1], (InputPosition{1, 0, 9, 90, 30}));
  // At most `wait` for one that does not come.
  ASSERT_TRUE(beat(11, {1, 0, 9, 90, 30}).ok());
  start = Clock::now();
  p = service_.WorkerPositions(20, 300ms);
  EXPECT_GE(Clock::now() - start, 300ms);
  EXPECT_EQ(p[1], (InputPosition{1, 0, 9, 90, 30}));
  // Nor for one whose steps stopped a second ago: its last report holds
  // its last position.
  std::this_thread::sleep_for(1100ms);
  ASSERT_TRUE(beat(11, {1, 0, 9, 90}).ok());
  start = Clock::now();
  p = service_.WorkerPositions(20, 5s);
  EXPECT_LT(Clock::now() - start, 1s);
}

// Heartbeats keep coming from both workers; worker:1's steps stop at 7 and
// worker:2's go on: only worker:1 is taken for dead, once, with its step.
// Position heartbeats stay near 100 a second at the chief however many
// workers send them; its checkpoints wait for them a little longer.
TEST_F(WatchdogTest, PositionHeartbeatsSlowDownInLargerRuns) {
  EXPECT_EQ(service_.workers(), 3);
  EXPECT_EQ(PositionHeartbeatDelay(1), 100ms);
  EXPECT_EQ(PositionHeartbeatDelay(10), 100ms);
  EXPECT_EQ(PositionHeartbeatDelay(64), 640ms);
  EXPECT_EQ(PositionWait(3), 500ms);
  EXPECT_EQ(PositionWait(64), 840ms);
  for (int workers : {16, 64, 1000}) {
    const double per_second =
        1000.0 * workers / double(PositionHeartbeatDelay(workers).count());
    EXPECT_LE(per_second, 100.0) << workers << " workers";
  }
}

// What the heartbeats cost the chief: each answered one is counted, with
// its handler's CPU time.
TEST_F(WatchdogTest, TheCoordinatorCountsTheHeartbeatsItAnswers) {
  EXPECT_EQ(service_.heartbeats(), 0);
  EXPECT_EQ(service_.heartbeat_cpu_seconds(), 0);
  for (int i = 0; i < 20; ++i) Beat("worker:1", 7, i);
  EXPECT_EQ(service_.heartbeats(), 20);
  EXPECT_GT(service_.heartbeat_cpu_seconds(), 0);
  EXPECT_LT(service_.heartbeat_cpu_seconds(), 1.0);
}

TEST_F(WatchdogTest, AWorkerWhoseStepsStallWhileItBeatsIsTakenForDead) {
  const auto start = Clock::now();
  int64_t steps2 = 0;
  while (Clock::now() - start < 900ms) {
    EXPECT_FALSE(Beat("worker:1", 11, 7).stalled());
    EXPECT_FALSE(Beat("worker:2", 22, ++steps2).stalled());
    std::this_thread::sleep_for(50ms);
    if (Clock::now() - start < 300ms) {
      EXPECT_TRUE(Stalled().empty());
    }
  }
  const std::vector<CoordinatorService::Stall> stalls = service_.CheckStalls();
  ASSERT_EQ(stalls.size(), 1u);
  EXPECT_EQ(stalls[0].task, "worker:1");
  EXPECT_EQ(stalls[0].step, 107);
  EXPECT_EQ(stalls[0].steps_done, 7);
  EXPECT_GE(stalls[0].seconds, 0.4);
  EXPECT_TRUE(Stalled().empty());  // found once
  // From now on it is answered stalled, and no longer waited for.
  EXPECT_TRUE(Beat("worker:1", 11, 7).stalled());
  EXPECT_THAT(service_.RunningWorkers("worker:0", 10s),
              ElementsAre("worker:2"));
  // A new process of the task (a restart) is watched anew.
  EXPECT_FALSE(Beat("worker:1", 12, 0).stalled());
  EXPECT_THAT(service_.RunningWorkers("worker:0", 10s),
              ElementsAre("worker:1", "worker:2"));
  EXPECT_TRUE(Stalled().empty());
}

// At the end of an async run the chief waits for the workers still
// training. One never heard from is still starting (a slow host, a pod
// being scheduled) until the start window has passed, not silent after a
// heartbeat timeout counted from the chief's start: it has a share of the
// input to train.
TEST_F(WatchdogTest, AWorkerNeverHeardIsWaitedForWhileItMayStillStart) {
  Beat("worker:1", 11, 0);
  EXPECT_THAT(service_.RunningWorkers("worker:0", 1s, 3s),
              ElementsAre("worker:1", "worker:2"));
  std::this_thread::sleep_for(1100ms);
  EXPECT_THAT(service_.RunningWorkers("worker:0", 1s, 3s),
              ElementsAre("worker:2"))
      << "worker:1 is silent, worker:2 may still start";
  EXPECT_THAT(service_.RunningWorkers("worker:0", 1s), IsEmpty())
      << "without a start window, the heartbeat timeout counts";
  std::this_thread::sleep_for(2000ms);
  EXPECT_THAT(service_.RunningWorkers("worker:0", 1s, 3s), IsEmpty());
}

// Elastic input: worker:2 silent for the timeout is taken for dead and
// its input shard handed on, from the position the parameter servers
// committed for it, to the live worker that reads the fewest (the chief,
// by its lower index); a new process of worker:2 is told it reads nothing.
TEST_F(WatchdogTest, ALostWorkersInputShardIsHandedOnToALiveWorker) {
  WatchEveryWorkersInput();
  const InputPosition at{3, 0, 90, 90};
  const std::vector<std::optional<InputPosition>> committed = {{}, {}, at};
  EXPECT_FALSE(service_.HasInputToHandOn());
  EXPECT_TRUE(service_.HandOnInput(committed).empty());
  for (int i = 0; i < 12; ++i) {
    std::this_thread::sleep_for(100ms);
    EXPECT_FALSE(Beat("worker:1", 11, 2 + i).has_input());
  }
  EXPECT_TRUE(service_.HasInputToHandOn());
  EXPECT_THAT(service_.HandOnInput(committed),
              ElementsAre("worker:2's input shard is read on by worker:0 "
                          "from epoch 4, record 90"));
  EXPECT_FALSE(service_.HasInputToHandOn());
  ASSERT_TRUE(service_.InputShardsOf("worker:0").has_value());
  EXPECT_THAT(*service_.InputShardsOf("worker:0"),
              ElementsAre(InputShard{0, {}}, InputShard{2, at, 1}));
  EXPECT_EQ(service_.InputShardsOf("worker:1"), std::nullopt);
  EXPECT_TRUE(service_.UnreadShards().empty());

  // A new process of worker:2 reads none: the chief, which reads two,
  // releases worker:2's own shard to it, and the process waits for it.
  rpc::HeartbeatResponse next = Beat("worker:2", 22, 0);
  ASSERT_TRUE(next.has_input());
  EXPECT_EQ(next.input().shards_size(), 0) << "its shard is read elsewhere";
  EXPECT_TRUE(next.input_pending());
  EXPECT_THAT(*service_.InputShardsOf("worker:0"),
              ElementsAre(InputShard{0, {}}));
  const InputPosition stopped{4, 0, 12, 12};
  service_.Released("worker:0", 2, stopped);
  next = Beat("worker:2", 22, 0);
  EXPECT_FALSE(next.input_pending());
  ASSERT_EQ(next.input().shards_size(), 1);
  EXPECT_EQ(next.input().shards(0).shard(), 2);
  EXPECT_THAT(next.input().shards(0).position(), ElementsAre(4, 0, 12, 12, 0));
  EXPECT_EQ(next.input().shards(0).grant(), 2u) << "its second handing";
  EXPECT_THAT(service_.HandOnInput(committed),
              ElementsAre("worker:0 releases worker:2's input shard to "
                          "worker:2",
                          "worker:2's input shard is read on by worker:2 from "
                          "epoch 5, record 12 (released by worker:0)"));
}

// A shard handed on and asked back before its holder looked (a network
// cut ends while the chief steps: it hands the silent worker's shard to
// itself, and the worker, heard again, asks for one at once): the holder
// never read it and says no release. Past the shard timeout the chief
// hands it on from its committed position rather than keep the worker
// waiting for ever.
TEST_F(WatchdogTest, AReleaseNotAnsweredWithinTheShardTimeoutIsHandedOn) {
  WatchEveryWorkersInput();
  const InputPosition at{3, 0, 90, 90};
  const std::vector<std::optional<InputPosition>> committed = {{}, {}, at};
  for (int i = 0; i < 12; ++i) {
    std::this_thread::sleep_for(100ms);
    Beat("worker:1", 11, 2 + i);
  }
  ASSERT_THAT(service_.HandOnInput(committed),
              ElementsAre("worker:2's input shard is read on by worker:0 "
                          "from epoch 4, record 90"));
  // The same process back: it reads none, and the chief is asked to
  // release worker:2's shard to it.
  rpc::HeartbeatResponse next = Beat("worker:2", 21, 1);
  EXPECT_TRUE(next.input_pending());
  EXPECT_EQ(next.input().shards_size(), 0);
  // Asked just now: said, and not handed on.
  EXPECT_THAT(
      service_.HandOnInput(committed),
      ElementsAre("worker:0 releases worker:2's input shard to worker:2"));
  EXPECT_FALSE(service_.HasInputToHandOn());
  for (int i = 0; i < 12; ++i) {
    std::this_thread::sleep_for(100ms);
    Beat("worker:1", 11, 20 + i);
    EXPECT_TRUE(Beat("worker:2", 21, 1).input_pending());
  }
  // The chief never said where it stopped.
  EXPECT_TRUE(service_.HasInputToHandOn());
  EXPECT_THAT(
      service_.HandOnInput(committed),
      ElementsAre("worker:0 did not say where it stopped reading worker:2's "
                  "input shard within 1 s of being asked: it is handed on "
                  "from its committed position",
                  "worker:2's input shard is read on by worker:2 from epoch "
                  "4, record 90"));
  next = Beat("worker:2", 21, 1);
  EXPECT_FALSE(next.input_pending());
  ASSERT_EQ(next.input().shards_size(), 1);
  EXPECT_EQ(next.input().shards(0).shard(), 2);
  EXPECT_THAT(next.input().shards(0).position(), ElementsAre(3, 0, 90, 90, 0));
  EXPECT_THAT(*service_.InputShardsOf("worker:0"),
              ElementsAre(InputShard{0, {}}));
}

// Worker slots reserved at launch (max_workers; here worker:2): not waited
// for, their input shard read by a live worker from the start; the slot's
// process, once `dtf scale` starts it, is waited for and gets its shard
// released to it.
TEST_F(WatchdogTest, AReservedSlotsShardIsReadByTheOthersUntilItStarts) {
  service_.ReserveWorkers(2);
  service_.WatchInput(10s, 60s);
  service_.Update("worker:0", TaskState::kRunning, 5, 0, 0);
  Beat("worker:1", 11, 1);
  EXPECT_THAT(service_.RunningWorkers("worker:0", 10s, 60s),
              ElementsAre("worker:1"));
  EXPECT_TRUE(service_.HasInputToHandOn());
  EXPECT_THAT(service_.HandOnInput({}),
              ElementsAre("worker:2's input shard (a reserved slot, not "
                          "started) is read by worker:0 from epoch 1, "
                          "record 0"));
  rpc::HeartbeatResponse next = Beat("worker:2", 21, 0);
  ASSERT_TRUE(next.has_input());
  EXPECT_EQ(next.input().shards_size(), 0);
  EXPECT_TRUE(next.input_pending());
  EXPECT_THAT(service_.RunningWorkers("worker:0", 10s, 60s),
              ElementsAre("worker:1", "worker:2"));
  const InputPosition stopped{0, 0, 64, 64};
  service_.Released("worker:0", 2, stopped);
  next = Beat("worker:2", 21, 0);
  EXPECT_FALSE(next.input_pending());
  ASSERT_EQ(next.input().shards_size(), 1);
  EXPECT_EQ(next.input().shards(0).shard(), 2);
  EXPECT_THAT(next.input().shards(0).position(), ElementsAre(0, 0, 64, 64, 0));
}

// A shard no live worker could take (here a reserved slot's at the start,
// before any worker trains) is parked, said of only when it is not a
// reserved slot's, and taken by the first live worker that asks with no
// shard: the slot's own process once started.
TEST_F(WatchdogTest, AShardNoWorkerCouldTakeGoesToTheNextWorkerWithNone) {
  service_.ReserveWorkers(2);
  service_.WatchInput(10s, 60s);
  EXPECT_TRUE(service_.HasInputToHandOn());
  EXPECT_THAT(service_.HandOnInput({}), IsEmpty()) << "nobody trains yet";
  rpc::HeartbeatResponse next = Beat("worker:2", 21, 0);
  EXPECT_FALSE(next.input_pending());
  ASSERT_EQ(next.input().shards_size(), 1);
  EXPECT_EQ(next.input().shards(0).shard(), 2);
  EXPECT_THAT(next.input().shards(0).position(), ElementsAre(0, 0, 0, 0, 0));
  EXPECT_THAT(service_.HandOnInput({}),
              ElementsAre("worker:2's input shard is read on by worker:2 "
                          "from epoch 1, record 0"));
  EXPECT_FALSE(service_.HasInputToHandOn());
}

// The window starts with the first heartbeat in state "running" (a slow
// start is not a stall), and the chief's own steps are its business.
TEST_F(WatchdogTest, StartingWorkersAndTheChiefAreNotWatched) {
  service_.Update("worker:0", TaskState::kRunning, 5, 0, 0);
  for (int i = 0; i < 12; ++i) {
    Beat("worker:1", 11, 0, "starting");
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(Stalled().empty());
  Beat("worker:1", 11, 0);
  std::this_thread::sleep_for(200ms);
  EXPECT_TRUE(Stalled().empty());
  std::this_thread::sleep_for(300ms);
  EXPECT_THAT(Stalled(), ElementsAre("worker:1"));
}

// A worker cut off from the chief (the network between the hosts down):
// its heartbeats stop as its steps do. It is not taken for stuck while
// silent, and when it is heard again its window starts anew, so that a
// partition longer than the stall timeout costs no healthy worker; a
// worker that then still finishes no step is taken for dead as before.
TEST_F(WatchdogTest, AWorkerCutOffIsNotTakenForStuckAndIsWatchedAnewWhenHeard) {
  service_.Watch("worker:0", 1500ms);
  Beat("worker:1", 11, 3);
  std::this_thread::sleep_for(CoordinatorService::kHeardWithin + 200ms);
  EXPECT_TRUE(Stalled().empty()) << "silent, not stuck while it beats";
  // Heard again, its steps still where they were.
  const auto heard = Clock::now();
  EXPECT_FALSE(Beat("worker:1", 11, 3).stalled());
  EXPECT_TRUE(Stalled().empty()) << "its window starts again";
  // Beating on without a step: taken for stuck a stall timeout after it
  // was heard again, not at once.
  std::vector<std::string> stalled;
  while (stalled.empty() && Clock::now() - heard < 10s) {
    std::this_thread::sleep_for(100ms);
    Beat("worker:1", 11, 3);
    stalled = Stalled();
  }
  EXPECT_THAT(stalled, ElementsAre("worker:1"));
  EXPECT_GE(Clock::now() - heard, 1500ms);
}

// While the chief evaluates or writes a checkpoint the workers may wait for
// it: no stall then, and each window starts again when it is done.
TEST_F(WatchdogTest, NoStallWhileTheChiefEvaluates) {
  Beat("worker:1", 11, 3);
  {
    const WatchPause pause(&service_);
    std::this_thread::sleep_for(600ms);
    EXPECT_TRUE(Stalled().empty());
  }
  std::this_thread::sleep_for(200ms);
  EXPECT_TRUE(Stalled().empty());
  std::this_thread::sleep_for(300ms);
  EXPECT_THAT(Stalled(), ElementsAre("worker:1"));
}

// A pause stops the window rather than starting it again: checkpoints
// written more often than the window once hid a frozen worker for the
// whole run.
TEST_F(WatchdogTest, FrequentPausesDoNotHideAStall) {
  Beat("worker:1", 11, 3);
  const auto start = Clock::now();
  while (Clock::now() - start < 1500ms && Stalled().empty()) {
    { const WatchPause pause(&service_); }
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_LT(Clock::now() - start, 1500ms) << "the stall was never found";
  EXPECT_GE(Clock::now() - start, 300ms);
}

TEST_F(WatchdogTest, ZeroTurnsItOff) {
  service_.Watch("worker:0", 0ms);
  Beat("worker:1", 11, 3);
  std::this_thread::sleep_for(600ms);
  Beat("worker:1", 11, 3);
  EXPECT_TRUE(Stalled().empty());
  EXPECT_FALSE(Beat("worker:1", 11, 3).stalled());
}

// Silent workers (what an allreduce chief fails the run on): heard from,
// neither done nor failed, and no heartbeat for the timeout.
TEST_F(WatchdogTest, SilentWorkers) {
  Beat("worker:1", 11, 3);
  Beat("worker:2", 22, 3, "done");
  EXPECT_TRUE(service_.SilentWorkers("worker:0", 1s).empty());
  std::this_thread::sleep_for(1100ms);
  EXPECT_THAT(service_.SilentWorkers("worker:0", 1s), ElementsAre("worker:1"));
}

// The chief's verdict: a parameter-server run notes a stalled worker and goes
// on; an allreduce run fails, naming the stalled (or silent) worker and its
// step.
TEST_F(WatchdogTest, AStalledWorkerFailsAnAllreduceRunOnly) {
  TrainSpec ps_train;
  ps_train.stall_timeout = 1;
  TrainSpec allreduce = ps_train;
  allreduce.mode = TrainMode::kAllreduce;
  allreduce.heartbeat_timeout = 1;
  Beat("worker:1", 11, 7);
  Beat("worker:2", 22, 3);
  std::this_thread::sleep_for(500ms);
  Beat("worker:1", 11, 7);
  std::vector<std::string> notes;
  auto note = [&](std::string_view n) { notes.emplace_back(n); };
  EXPECT_TRUE(WatchWorkers(service_, "worker:0", ps_train, note).ok());
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_THAT(notes[0], HasSubstr("worker:1 has finished no step for 1 s "
                                  "(stuck at global step 107, 7 steps done) "
                                  "though its heartbeats come: taken for "
                                  "dead (train.stall_timeout = 1 s); told it "
                                  "to exit"));
  EXPECT_THAT(notes[1], HasSubstr("worker:2 has finished no step"));

  // Another incarnation of each, watched anew: this time an allreduce run.
  Beat("worker:1", 12, 5);
  Beat("worker:2", 23, 5);
  std::this_thread::sleep_for(500ms);
  Beat("worker:1", 12, 5);
  Beat("worker:2", 23, 6);
  const Status st = WatchWorkers(service_, "worker:0", allreduce, note);
  EXPECT_EQ(st.code(), absl::StatusCode::kAborted);
  EXPECT_THAT(Message(st),
              HasSubstr("worker:1 has finished no step for 1 s (stuck at "
                        "global step 105, 5 steps done)"));
  EXPECT_THAT(Message(st), HasSubstr("an allreduce run cannot go on without "
                                     "it: the run fails"));
  EXPECT_EQ(notes.size(), 2u);

  // worker:2 falls silent (for heartbeat_timeout, shorter than the stall
  // timeout as train_spec requires).
  service_.Watch("worker:0", 5s);
  std::this_thread::sleep_for(600ms);
  Beat("worker:1", 12, 5);
  std::this_thread::sleep_for(500ms);
  const Status silent = WatchWorkers(service_, "worker:0", allreduce, note);
  EXPECT_EQ(silent.code(), absl::StatusCode::kAborted);
  EXPECT_THAT(Message(silent),
              HasSubstr("worker:2 has sent no heartbeat for 1 s "
                        "(train.heartbeat_timeout); an allreduce run cannot "
                        "go on without it"));
}

// Another process of a rank that had stepped (its pod replaced by a Job
// controller) heartbeats on at once, so the rank never falls silent; the
// chief of an allreduce run still fails, naming it, rather than wait in a
// collective the old process left. A parameter-server chief goes on.
TEST_F(WatchdogTest, AReplacedRankFailsAnAllreduceRunOnly) {
  TrainSpec ps_train;
  TrainSpec allreduce = ps_train;
  allreduce.mode = TrainMode::kAllreduce;
  Beat("worker:1", 11, 0, "starting");
  Beat("worker:1", 11, 7);
  EXPECT_TRUE(WatchWorkers(service_, "worker:0", allreduce, nullptr).ok());
  // A first process that never stepped (a slow start) is not a lost rank.
  Beat("worker:2", 21, 0, "starting");
  Beat("worker:2", 22, 0, "starting");
  EXPECT_TRUE(WatchWorkers(service_, "worker:0", allreduce, nullptr).ok());
  Beat("worker:1", 12, 0, "starting");
  EXPECT_TRUE(WatchWorkers(service_, "worker:0", ps_train, nullptr).ok());
  const Status st = WatchWorkers(service_, "worker:0", allreduce, nullptr);
  EXPECT_EQ(st.code(), absl::StatusCode::kAborted);
  EXPECT_THAT(Message(st),
              HasSubstr("worker:1 is another process now (started again "
                        "after it had stepped or joined the ranks' "
                        "rendezvous)"));
}

// The allreduce rendezvous of a rank's replacement (a pod the Job's
// controller started again while the old chief still ran): the old chief's
// store refuses it, even before its first heartbeat, and marks the rank
// replaced (the chief's run fails on it); the rank asks again until the
// next chief answers, and joins that one's rendezvous instead of the old.
TEST_F(WatchdogTest, AReplacedRankWaitsForTheNextChiefsRendezvous) {
  Beat("worker:1", 11, 0, "starting");
  Beat("worker:1", 11, 7);
  ASSERT_TRUE(service_.SetKey("gloo/0", "the old chief").ok());
  CoordinatorStore same(port_.address(), kCreds, "worker:1", nullptr, 11, 2s);
  EXPECT_TRUE(same.Set("gloo/1", "old").ok());
  EXPECT_TRUE(service_.ReplacedWorkers("worker:0").empty());

  CoordinatorStore next(port_.address(), kCreds, "worker:1", nullptr, 12, 1s);
  const Status set = next.Set("gloo/1", "new");
  EXPECT_EQ(set.code(), StatusCode::kDeadlineExceeded) << set;
  EXPECT_THAT(Message(set), HasSubstr("worker:1 is another process than the "
                                      "one that stepped with this chief"));
  EXPECT_EQ(service_.GetKey("gloo/1"), "old");
  EXPECT_THAT(service_.ReplacedWorkers("worker:0"), ElementsAre("worker:1"));
  EXPECT_EQ(next.Get("gloo/0", 500ms).status().code(),
            StatusCode::kDeadlineExceeded);
  // Once replaced, the rank's old number is refused too.
  EXPECT_EQ(same.Get("gloo/0", 300ms).status().code(),
            StatusCode::kDeadlineExceeded);

  CoordinatorStore waiting(port_.address(), kCreds, "worker:1", nullptr, 12,
                           60s);
  Status joined = InternalError("not run");
  StatusOr<std::string> chief_address = InternalError("not run");
  std::thread rank([&] {
    joined = waiting.Set("gloo/1", "new");
    if (joined.ok()) chief_address = waiting.Get("gloo/0", 60s);
  });
  std::this_thread::sleep_for(300ms);
  server_->Shutdown();
  // The next chief, on the same address, with a store of its own.
  CoordinatorService next_chief(
      kCreds,
      {{"worker:0", port_.address()}, {"worker:1", ""}, {"worker:2", ""}});
  grpc::ServerBuilder builder;
  int bound = 0;
  builder.AddListeningPort(port_.address(), grpc::InsecureServerCredentials(),
                           &bound);
  builder.RegisterService(&next_chief);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_EQ(bound, port_.port());
  ASSERT_TRUE(next_chief.SetKey("gloo/0", "the next chief").ok());
  rank.join();
  server->Shutdown();
  ASSERT_TRUE(joined.ok()) << joined;
  EXPECT_EQ(next_chief.GetKey("gloo/1"), "new");
  ASSERT_TRUE(chief_address.ok()) << chief_address.status();
  EXPECT_EQ(*chief_address, "the next chief");
}

// A rank replaced after it joined the rendezvous but before it stepped:
// the ranks that read its key wait for a process that is gone, so the
// chief's store marks it replaced (the allreduce run fails at once rather
// than at collective_timeout) and refuses the new process. A first
// process's calls, and a task never heard from, are answered.
TEST_F(WatchdogTest, ARankReplacedInTheRendezvousFailsAnAllreduceRun) {
  TrainSpec allreduce;
  allreduce.mode = TrainMode::kAllreduce;
  CoordinatorStore first(port_.address(), kCreds, "worker:1", nullptr, 21, 1s);
  ASSERT_TRUE(first.Set("gloo/1", "first").ok());
  EXPECT_TRUE(first.Get("gloo/1", 1s).ok());
  CoordinatorStore two(port_.address(), kCreds, "worker:2", nullptr, 31, 1s);
  ASSERT_TRUE(two.Set("gloo/2", "two").ok());
  EXPECT_TRUE(WatchWorkers(service_, "worker:0", allreduce, nullptr).ok());

  CoordinatorStore again(port_.address(), kCreds, "worker:1", nullptr, 22,
                         500ms);
  EXPECT_EQ(again.Set("gloo/1", "again").code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(service_.GetKey("gloo/1"), "first");
  EXPECT_THAT(service_.ReplacedWorkers("worker:0"), ElementsAre("worker:1"));
  const Status st = WatchWorkers(service_, "worker:0", allreduce, nullptr);
  EXPECT_EQ(st.code(), absl::StatusCode::kAborted);
  EXPECT_THAT(Message(st), HasSubstr("worker:1 is another process now "
                                     "(started again after it had stepped "
                                     "or joined the ranks' rendezvous)"));
  // worker:2's process is the one that joined: still answered.
  EXPECT_TRUE(two.Get("gloo/2", 1s).ok());
}

}  // namespace
}  // namespace dtf::runtime
