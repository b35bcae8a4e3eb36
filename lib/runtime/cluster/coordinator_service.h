// The chief's Coordinator service: every other task heartbeats to it; it
// knows who is alive, who finished, and the run's progress, which
// `dtf status` reads. When the run is over it answers heartbeats with
// shutdown = true. In an allreduce run it also hands out the NCCL unique id
// the chief made. It also keeps the step-progress watchdog (Watch,
// CheckStalls): a worker whose heartbeats come but whose steps do not
// advance for the stall timeout is taken for dead. It keeps the input
// position each worker last reported, which the chief's checkpoints record
// (WorkerPositions). Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/data/input_pipeline.h"
#include "lib/data/train_options.h"
#include "lib/rpc/call.h"
#include "lib/runtime/cluster/input_shard_table.h"
#include "lib/runtime/cluster/task_state.h"
#include "proto/dtf.grpc.pb.h"

namespace dtf::runtime {

// How soon after a training step a worker sends its step and input
// position (rather than with its next heartbeat a second on), in a run of
// `workers` workers: 100 ms, stretched in larger runs so that the chief
// hears at most about 100 such heartbeats a second from all of them
// (64 workers: 640 ms). The chief serves them on the CPU it trains with.
std::chrono::milliseconds PositionHeartbeatDelay(int workers);

// How often a task sends a heartbeat when `heartbeat_timeout` (the
// silence after which the chief takes a worker for dead) is this: once a
// second, or three times in a timeout shorter than 3 s, so that a beat
// that comes a little late does not make a live worker silent.
std::chrono::milliseconds HeartbeatPeriod(
    std::chrono::seconds heartbeat_timeout);

// How long the chief's checkpoint waits for the positions of its step in
// a run of `workers` workers: 500 ms, or a position heartbeat's delay and
// 200 ms more where that is longer.
std::chrono::milliseconds PositionWait(int workers);

class CoordinatorService final : public rpc::Coordinator::Service {
 public:
  // `tasks`: every task of the run ("ps:0", "worker:1", ...) with its
  // address; the chief itself included.
  CoordinatorService(rpc::RunCredentials credentials,
                     std::vector<std::pair<std::string, std::string>> tasks);

  grpc::Status Heartbeat(grpc::ServerContext* context,
                         const rpc::HeartbeatRequest* request,
                         rpc::HeartbeatResponse* response) override;
  grpc::Status Status(grpc::ServerContext* context,
                      const rpc::StatusRequest* request,
                      rpc::StatusResponse* response) override;
  // The id SetCommId set; UNAVAILABLE before that.
  grpc::Status CommId(grpc::ServerContext* context,
                      const rpc::CommIdRequest* request,
                      rpc::CommIdResponse* response) override;
  // The rendezvous store of a Gloo allreduce run (SetKey, GetKey).
  // UNAVAILABLE to a process of a task other than the one that stepped
  // (marked replaced, as a heartbeat from it would): this chief's ranks
  // met without it, and it waits for the next chief.
  grpc::Status KvSet(grpc::ServerContext* context,
                     const rpc::KvSetRequest* request,
                     rpc::KvSetResponse* response) override;
  grpc::Status KvGet(grpc::ServerContext* context,
                     const rpc::KvGetRequest* request,
                     rpc::KvGetResponse* response) override;

  // The chief's own progress and state.
  void Update(const std::string& task, TaskState state, int64_t step,
              double loss, double examples_per_sec);
  void SetRunState(RunState state, int64_t global_step);
  void SetEvalMetrics(const std::vector<std::pair<std::string, double>>& m);
  // The NCCL unique id of an allreduce run (lib/kernels/collective.h),
  // which CommId hands to the other workers from now on.
  void SetCommId(std::string id);
  // The rendezvous store of a Gloo allreduce run (lib/kernels/gloo.h), as
  // KvSet and KvGet serve it: a key of at most kMaxKeyBytes, a value of at
  // most kMaxValueBytes, at most kMaxKeys keys (ResourceExhausted beyond,
  // InvalidArgument for a key or value too long). GetKey: nullopt while the
  // key is not set.
  static constexpr size_t kMaxKeyBytes = 256;
  static constexpr size_t kMaxValueBytes = 32 << 10;
  static constexpr size_t kMaxKeys = 4096;
  ::dtf::Status SetKey(const std::string& key, std::string_view value);
  std::optional<std::string> GetKey(const std::string& key) const;
  // From now on heartbeats answer stop_training = true: training stopped
  // early, every worker ends as when its data runs out (parameter servers
  // keep serving until EndRun).
  void StopTraining();
  // From now on heartbeats answer shutdown = true.
  void EndRun();
  // Workers (other than `self`) that are neither done, failed nor stalled,
  // and heard from within `timeout`; or never heard from yet while less
  // than `start_within` has passed since the service started (a worker
  // still starting: a slow host, a pod being scheduled).
  std::vector<std::string> RunningWorkers(
      const std::string& self, std::chrono::seconds timeout,
      std::chrono::seconds start_within = std::chrono::seconds(0)) const;

  // The step-progress watchdog: from now on CheckStalls watches every
  // worker but `self` (the chief); `stall_timeout` 0: it watches none.
  void Watch(std::string self, std::chrono::milliseconds stall_timeout);
  // While the chief evaluates or writes a checkpoint (PauseWatch ..
  // ResumeWatch, nested), the other workers may wait for it (an allreduce
  // collective): no stall is found then, and each worker's window stops
  // for the pause (its time does not count) and goes on when the last
  // pause ends.
  void PauseWatch();
  void ResumeWatch();
  struct Stall {
    std::string task;
    int64_t step = 0;        // its global step when it last finished one
    int64_t steps_done = 0;  // the steps its process had finished
    double seconds = 0;      // since it last finished one
  };
  // A worker not heard from for this long is silent: the step watchdog
  // leaves it alone (it is cut off or gone, not stuck while it beats), and
  // when it is heard again its window starts anew.
  static constexpr std::chrono::seconds kHeardWithin{3};
  // The workers found stalled since the last call: in state "running" (its
  // window starts with its first heartbeat in that state, and again with
  // one after a silence of kHeardWithin), heard from within kHeardWithin,
  // and no step finished for the stall timeout. Each is marked "stalled" from
  // now on: RunningWorkers leaves it out, and its process's heartbeats are
  // answered stalled = true (a new process of the task is watched anew).
  std::vector<Stall> CheckStalls();
  // Workers found stalled whose process has not been answered stalled yet.
  int UntoldStalled() const;
  // Workers other than `self`, heard from and neither done nor failed, that
  // have been silent for `timeout`.
  std::vector<std::string> SilentWorkers(const std::string& self,
                                         std::chrono::seconds timeout) const;
  // Workers other than `self` from which another process has been heard
  // after one that had stepped or used the rendezvous store: an engine (a
  // Kubernetes Job) replaced the process, so whatever it held (an
  // allreduce rank) is gone.
  std::vector<std::string> ReplacedWorkers(const std::string& self) const;

  // The input position each worker ("worker:<i>", at index i) last
  // reported with a heartbeat, of whichever of its processes reported
  // last; nullopt for a worker none has been heard from with one. First
  // waits, for at most `wait`, until every worker but the chief (worker:0)
  // that is starting or training (heard from within 3 s, its steps advanced
  // within 1 s, not stalled) has reported one at global step `step` or
  // later: the positions of the steps before the chief's checkpoint at
  // `step`, rather than a heartbeat older.
  std::vector<std::optional<InputPosition>> WorkerPositions(
      int64_t step, std::chrono::milliseconds wait) const;

  // The run's worker tasks (the chief among them).
  int workers() const { return workers_; }
  // Worker slots from `started` on are reserved: not started at launch
  // (the profile's max_workers; `dtf scale` starts them). Until heard
  // from, such a worker is not waited for (RunningWorkers) and its input
  // shard is handed on at once, to be released to it when it comes.
  void ReserveWorkers(int started);
  // Worker slot `w` (not the chief) is not started: as a reserved one.
  void ReserveWorker(int w);

  // Input shards (parameter-server runs; docs/launch.md, *Elastic
  // workers*). From now on a worker heard from before and silent for
  // `timeout`, never heard from `start_within` after the start, or found
  // stalled, is taken for dead (HandOnInput hands its shards on), and a
  // live worker that reads no shard while another reads two or more is
  // given one as its heartbeat is answered. Until it is called, no shard
  // moves.
  void WatchInput(std::chrono::seconds timeout,
                  std::chrono::seconds start_within);
  // Called by the chief's training thread: hands on the shards of workers
  // taken for dead, each to the live worker that reads the fewest, to
  // read on from the later of its position `committed` with the
  // parameter servers' variables and the one its worker last sent. A
  // worker's own shard stays its own while it lives: a new process of it
  // reads on from its own position. Returns a note for each shard handed
  // on, or left unread for want of a live worker (said once), and for
  // each release done since the last call.
  std::vector<std::string> HandOnInput(
      const std::vector<std::optional<InputPosition>>& committed);
  // Whether HandOnInput has a shard to hand on or a note to return now
  // (cheap: the chief then asks the parameter servers for the committed
  // positions).
  bool HasInputToHandOn() const;
  // The shards worker `task` reads, as its heartbeats are answered
  // (InputShardTable::Of, any process of it).
  std::optional<std::vector<InputShard>> InputShardsOf(
      const std::string& task) const;
  // The chief's own ShardedInput stopped reading `shard` at `at` (as a
  // worker's heartbeat says: HeartbeatRequest.released).
  void Released(const std::string& task, int shard, const InputPosition& at);
  // The shards no worker reads (the run ends without their rest): a note
  // each.
  std::vector<std::string> UnreadShards() const;

  // Heartbeats answered so far, and the CPU seconds their handlers used
  // (the handlers' own work; gRPC's around them is not counted): what the
  // chief pays for the heartbeats. bench/scale reads both.
  int64_t heartbeats() const { return heartbeats_.load(); }
  double heartbeat_cpu_seconds() const {
    return double(heartbeat_cpu_ns_.load()) * 1e-9;
  }

 private:
  grpc::Status HandleHeartbeat(grpc::ServerContext* context,
                               const rpc::HeartbeatRequest* request,
                               rpc::HeartbeatResponse* response);
  // Takes the shards `request` says its process released, and fills
  // response->input (once a shard moved to or from the task) and
  // input_pending. A live process of a worker that reads no shard while
  // another reads two or more is given one (InputShardTable::Release): its
  // own where another reads it. REQUIRES: mu_ held.
  void AnswerInputShards(const rpc::HeartbeatRequest& request,
                         rpc::HeartbeatResponse* response);
  // Gives process `incarnation` of worker `w`, which reads none, a shard
  // parked for want of a live worker (its own first); false when none is.
  // REQUIRES: mu_ held.
  bool TakeParkedLocked(int w, uint64_t incarnation);
  // Asks for a shard to be released to process `incarnation` of worker
  // `w`, which reads none; false when no live worker reads two or more.
  // REQUIRES: mu_ held.
  bool BalanceLocked(int w, uint64_t incarnation);
  // Worker w stopped reading shard s at `at`: a release of it completes.
  // REQUIRES: mu_ held.
  void ReleasedLocked(int w, int s, const InputPosition& at);
  // Whether worker `w` (not the chief) is taken for dead (WatchInput's
  // timeouts). REQUIRES: mu_ held.
  bool TakenForDead(int w) const;
  // Whether shard s is read by no live process. REQUIRES: mu_ held.
  bool ShardLost(int s) const;
  // The live worker that reads the fewest shards (the lowest among
  // equals); -1: none. REQUIRES: mu_ held.
  int LiveWorkerReadingFewestLocked() const;
  // KvSet's and KvGet's caller `task`, as process `incarnation` (0: not
  // told): UNAVAILABLE when it is a replaced one.
  grpc::Status CheckStoreCaller(const std::string& task, uint64_t incarnation);

  struct Task {
    std::string address;
    TaskState state = TaskState::kStarting;
    int64_t step = 0;
    double loss = 0;
    double examples_per_sec = 0;
    int64_t rss_bytes = 0;  // the last heartbeat's; 0: unknown
    std::chrono::steady_clock::time_point last_heartbeat;
    bool heard = false;
    // A reserved slot (ReserveWorkers): not started at launch.
    bool reserved = false;
    // A reserved slot no process of which has been heard from yet.
    bool NotStarted() const { return reserved && !heard; }
    // The watchdog's view of the process `incarnation`.
    uint64_t incarnation = 0;
    int64_t steps_done = 0;
    std::optional<InputPosition> position;
    bool watched = false;  // heard in state "running"
    std::chrono::steady_clock::time_point progress_at;
    // The watchdog's window: from progress_at, moved later by the time
    // the watch was paused since.
    std::chrono::steady_clock::time_point window_from;
    bool stalled = false;
    bool told = false;  // answered stalled = true
    // The process that set or read the rendezvous store (0: none yet).
    uint64_t store_incarnation = 0;
    // Whether process `other` replaces one that stepped: the process that
    // was heard from had finished a step.
    bool ReplacesOneThatStepped(uint64_t other) const {
      return incarnation != 0 && other != incarnation && steps_done > 0;
    }
    // Heard from another process of the task after one that stepped or
    // used the rendezvous store (a replaced pod): the earlier process is
    // gone.
    bool replaced = false;
  };
  // Whether worker `w`, in state `t`, trains (reads input): a worker
  // "running"; the chief from its start.
  static bool Training(int w, const Task& t);
  const rpc::RunCredentials credentials_;
  const std::chrono::steady_clock::time_point start_;
  mutable std::mutex mu_;
  // Notified with every heartbeat (WorkerPositions waits on it).
  mutable std::condition_variable heard_;
  std::map<std::string, Task> tasks_;
  std::vector<std::string> order_;
  RunState run_state_ = RunState::kRunning;
  int64_t global_step_ = 0;
  std::vector<std::pair<std::string, double>> eval_;
  bool ended_ = false;
  bool stop_training_ = false;
  std::string comm_id_;
  std::map<std::string, std::string> kv_;
  std::string watch_self_;
  std::chrono::milliseconds stall_timeout_{0};
  int pauses_ = 0;
  // When the outermost pause began.
  std::chrono::steady_clock::time_point paused_at_;
  int workers_ = 0;
  InputShardTable shards_;
  // Shards said to be left unread for want of a live worker.
  std::vector<bool> unread_told_;
  // When each shard's release was asked of its holder (BalanceLocked).
  std::vector<std::chrono::steady_clock::time_point> release_asked_;
  // WatchInput's timeouts (0: not called: no shard moves).
  std::chrono::seconds shard_timeout_{0};
  std::chrono::seconds shard_start_within_{0};
  // What the shards' moves in heartbeat handlers said, for HandOnInput to
  // return.
  std::vector<std::string> shard_notes_;
  std::atomic<int64_t> heartbeats_{0};
  std::atomic<int64_t> heartbeat_cpu_ns_{0};
};

// Pauses `coordinator`'s watchdog (may be null) for its lifetime.
class WatchPause {
 public:
  explicit WatchPause(CoordinatorService* coordinator)
      : coordinator_(coordinator) {
    if (coordinator_ != nullptr) coordinator_->PauseWatch();
  }
  ~WatchPause() {
    if (coordinator_ != nullptr) coordinator_->ResumeWatch();
  }
  WatchPause(const WatchPause&) = delete;
  WatchPause& operator=(const WatchPause&) = delete;

 private:
  CoordinatorService* coordinator_;
};

// The chief's step-progress watchdog, looked at once (the chief `self`
// serves `coordinator`): the workers found stalled now (CheckStalls). In a
// parameter-server run each is noted through `note` (may be empty) and OK
// is returned: the chief no longer waits for it, and it is told to exit. In
// an allreduce run, whose collectives wait for every worker, the first of
// them — or else a worker silent for train.heartbeat_timeout — is an
// Aborted error naming it and its step: the run must fail.
Status WatchWorkers(CoordinatorService& coordinator, const std::string& self,
                    const TrainSpec& train,
                    const std::function<void(std::string_view)>& note);

// A stub for calls to the chief's Coordinator at `chief`, the server's
// certificate checked for the chief's task name where `creds` say so
// (rpc::ForTask).
std::unique_ptr<rpc::Coordinator::Stub> NewChiefStub(
    const std::string& chief, const rpc::RunCredentials& creds);

// Asks the chief's Coordinator at `chief` (host:port) for the NCCL unique
// id, again every half second while the chief is unreachable or has none
// yet, for at most `timeout`: DeadlineExceeded then, saying so; Cancelled
// when `cancel` (may be null) is set; other errors at once.
StatusOr<std::string> FetchCommId(const std::string& chief,
                                  const rpc::RunCredentials& credentials,
                                  const std::string& task,
                                  std::chrono::seconds timeout,
                                  const std::atomic<bool>* cancel);

}  // namespace dtf::runtime
